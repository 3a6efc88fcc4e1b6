//! Names read at run time (a DUT's state and timer names, a golden file's keys) turned into the
//! `'static` names a [`ccreplay_reference_cc::Decision`] carries, so decisions from every source
//! share one type and compare without allocating.
//!
//! Each distinct name (and each distinct list of state names) is leaked once. The set is bounded:
//! past [`MAX_NAMES`] distinct names the interner refuses, so a hostile DUT cannot grow memory
//! without end.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Most distinct names (and name lists) the process will hold.
pub const MAX_NAMES: usize = 4096;

#[derive(Default)]
struct Tables {
    names: HashMap<String, &'static str>,
    lists: HashMap<Vec<&'static str>, &'static [&'static str]>,
}

fn tables() -> &'static Mutex<Tables> {
    static T: OnceLock<Mutex<Tables>> = OnceLock::new();
    T.get_or_init(Default::default)
}

/// The `'static` copy of `name`, or `None` when [`MAX_NAMES`] distinct names exist already.
pub fn name(name: &str) -> Option<&'static str> {
    let mut t = tables().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = t.names.get(name) {
        return Some(s);
    }
    if t.names.len() >= MAX_NAMES {
        return None;
    }
    let s: &'static str = Box::leak(name.to_owned().into_boxed_str());
    t.names.insert(name.to_owned(), s);
    Some(s)
}

/// The `'static` list of these names, or `None` past [`MAX_NAMES`] lists.
pub fn list(names: &[&'static str]) -> Option<&'static [&'static str]> {
    let mut t = tables().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = t.lists.get(names) {
        return Some(s);
    }
    if t.lists.len() >= MAX_NAMES {
        return None;
    }
    let s: &'static [&'static str] = Box::leak(names.to_vec().into_boxed_slice());
    t.lists.insert(names.to_vec(), s);
    Some(s)
}

#[cfg(test)]
mod tests {
    #[test]
    fn same_name_same_pointer() {
        let a = super::name("Wc").unwrap();
        let b = super::name(&String::from("Wc")).unwrap();
        assert!(std::ptr::eq(a, b));
        let l1 = super::list(&[a, super::name("U").unwrap()]).unwrap();
        let l2 = super::list(&[b, super::name("U").unwrap()]).unwrap();
        assert!(std::ptr::eq(l1, l2));
    }
}
