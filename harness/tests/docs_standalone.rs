//! The project's docs stand on their own: README.md, docs/**/*.md and tests/fixtures/README.md
//! name no file outside the repository (the design notes and papers the project was built from
//! are not shipped with it), every markdown link and every `.md` path they mention resolves to a
//! file of the repository, and every section they cite by number ("docs/wire.md 4",
//! "wire.md section 3", "docs/dut.md 1.2") is a numbered heading of that file.
//!
//! Only std: plain substring and byte scans, no regex.

use std::fs;
use std::path::{Path, PathBuf};

/// Substrings that only ever name files outside the repository.
const FORBIDDEN: &[&str] = &["harness.md", "algorithms.md", "spec/", "shared/"];

fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.parent().expect("harness/ has a parent");
    root.canonicalize().expect("repository root")
}

/// One checked document: its path relative to the repository root and its text.
struct Doc {
    rel: String,
    text: String,
}

impl Doc {
    fn dir(&self, root: &Path) -> PathBuf {
        root.join(&self.rel)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| root.to_path_buf())
    }
}

fn collect_md(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_md(&path, out);
        } else if path.extension().is_some_and(|x| x == "md") {
            out.push(path);
        }
    }
}

/// README.md, every docs/**/*.md and the READMEs of tests/fixtures/, traces/, examples/duts/
/// and contrib/wireshark/.
fn docs(root: &Path) -> Vec<Doc> {
    let mut paths = vec![root.join("README.md")];
    collect_md(&root.join("docs"), &mut paths);
    for r in [
        "tests/fixtures/README.md",
        "traces/README.md",
        "examples/duts/README.md",
        "contrib/wireshark/README.md",
    ] {
        paths.push(root.join(r));
    }
    let docs: Vec<Doc> = paths
        .iter()
        .map(|p| Doc {
            rel: p
                .strip_prefix(root)
                .expect("inside the repository")
                .to_string_lossy()
                .replace('\\', "/"),
            text: fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display())),
        })
        .collect();
    assert!(
        docs.len() > 10 && docs.iter().any(|d| d.rel == "docs/wire.md"),
        "the doc set is not what this test expects: {:?}",
        docs.iter().map(|d| &d.rel).collect::<Vec<_>>()
    );
    docs
}

/// 1-based line number of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Resolves a path named in `doc` the way a reader would: relative to the doc's own folder, to
/// the repository root, and to docs/ (a bare `wire.md` anywhere means docs/wire.md). Only a path
/// that exists inside the repository counts.
fn resolve(root: &Path, doc: &Doc, name: &str) -> Option<PathBuf> {
    let name = name.strip_prefix("./").unwrap_or(name);
    if name.is_empty() || name.starts_with('/') {
        return None;
    }
    [doc.dir(root), root.to_path_buf(), root.join("docs")]
        .iter()
        .filter_map(|base| base.join(name).canonicalize().ok())
        .find(|p| p.starts_with(root))
}

fn is_path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-')
}

/// Every path mention ending in `.md`: (start, end) byte ranges of the path token. URLs
/// (`https://.../x.md`) are not repository paths and are left out, as is a bare `.md` with no
/// name before it (a glob such as `*.md`).
fn md_mentions(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find(".md") {
        let dot = from + pos;
        let end = dot + 3;
        from = end;
        if bytes
            .get(end)
            .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
        {
            continue; // `.mdx`, `.md_file`: not a markdown path
        }
        let mut start = dot;
        while start > 0 && is_path_byte(bytes[start - 1]) {
            start -= 1;
        }
        let token = &text[start..end];
        let name_len = token.len() - 3;
        let is_url = token.starts_with("//") || (start > 0 && bytes[start - 1] == b':');
        if name_len == 0 || token.ends_with("/.md") || is_url {
            continue;
        }
        out.push((start, end));
    }
    out
}

/// Every markdown link `[text](target)`: (offset of the target, target without anchor or title).
fn md_links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find("](") {
        let start = from + pos + 2;
        from = start;
        let Some(len) = text[start..].find(')') else {
            continue;
        };
        let raw = text[start..start + len].trim();
        let raw = raw.split_whitespace().next().unwrap_or(""); // drop a "title"
        let target = raw.split('#').next().unwrap_or("");
        let external = ["http://", "https://", "mailto:", "ftp://"]
            .iter()
            .any(|p| raw.starts_with(p));
        if external || raw.starts_with('#') {
            continue;
        }
        out.push((start, target.to_string()));
    }
    out
}

/// A section number cited right after a path token ending at `end`: `wire.md 4`, `wire.md 5.2`,
/// `wire.md section 4`, `` `wire.md` 4 ``, `[wire.md](wire.md) 4`, `wire.md §4`, over a line
/// break too; a range `5.1-5.3` (or `5.1..5.3`) cites both ends. Returns the numbers as written.
fn cited_sections(text: &str, end: usize) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut i = end;
    if bytes.get(i) == Some(&b'`') {
        i += 1;
    }
    if text[i..].starts_with("](") {
        match text[i..].find(')') {
            Some(close) => i += close + 1,
            None => return Vec::new(),
        }
    }
    let skip_space = |mut i: usize| {
        let mut newlines = 0;
        while let Some(&b) = bytes.get(i) {
            match b {
                b' ' | b'\t' => i += 1,
                b'\n' if newlines == 0 => {
                    newlines += 1;
                    i += 1;
                }
                _ => break,
            }
        }
        i
    };
    let after_path = skip_space(i);
    let mut j = after_path;
    for word in ["sections", "section", "§"] {
        if text[j..].starts_with(word) {
            j = skip_space(j + word.len());
            break;
        }
    }
    if j == after_path && after_path == i {
        // `wire.md4` or `wire.md.`: no citation (a number must follow a space or a word)
        return Vec::new();
    }
    let number = |j: usize| -> Option<(String, usize)> {
        let digits = |k: usize| {
            let mut e = k;
            while bytes.get(e).is_some_and(u8::is_ascii_digit) {
                e += 1;
            }
            e
        };
        let e = digits(j);
        if e == j {
            return None;
        }
        let mut num_end = e;
        if bytes.get(e) == Some(&b'.') && bytes.get(e + 1).is_some_and(u8::is_ascii_digit) {
            num_end = digits(e + 1);
        }
        if bytes
            .get(num_end)
            .is_some_and(|b| b.is_ascii_alphanumeric())
        {
            return None; // `4KB`, `5x`: a quantity, not a section
        }
        Some((text[j..num_end].to_string(), num_end))
    };
    let Some((first, e)) = number(j) else {
        return Vec::new();
    };
    let mut out = vec![first];
    for sep in ["-", "..", "–"] {
        if text[e..].starts_with(sep)
            && let Some((second, _)) = number(e + sep.len())
        {
            out.push(second);
            break;
        }
    }
    out
}

/// The section numbers of a markdown file's headings: `## 4. Title` gives "4", `### 1.2 Title`
/// gives "1.2".
fn heading_numbers(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let rest = line.trim_start_matches('#');
        if !rest.starts_with(' ') {
            continue;
        }
        if let Some(first) = rest.split_whitespace().next() {
            let num = first.trim_end_matches('.');
            if !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                out.push(num.to_string());
            }
        }
    }
    out
}

/// Mentions of files that are not in the repository: the shared design notes and the papers by
/// their seed numbers ("seed 000", "seeds 001").
fn outside_references(doc: &Doc) -> Vec<String> {
    let mut errors = Vec::new();
    for (n, line) in doc.text.lines().enumerate() {
        let lower = line.to_ascii_lowercase();
        for f in FORBIDDEN {
            if lower.contains(f) {
                errors.push(format!(
                    "{}:{}: names `{f}`: {}",
                    doc.rel,
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    // A seed reference may be wrapped over two lines, so scan the whole text.
    let lower = doc.text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut from = 0;
    while let Some(pos) = lower[from..].find("seed") {
        let at = from + pos;
        from = at + 4;
        let mut i = at + 4;
        if bytes.get(i) == Some(&b's') {
            i += 1;
        }
        let ws = i;
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        if i > ws && digits == 3 {
            errors.push(format!(
                "{}:{}: names a paper by its seed number (`{}`): give the paper's title, authors, venue and year, or docs/papers.md",
                doc.rel,
                line_of(&doc.text, at),
                &doc.text[at..i + 3].replace('\n', " ")
            ));
        }
    }
    errors
}

fn unresolved_paths(root: &Path, doc: &Doc) -> Vec<String> {
    let mut errors = Vec::new();
    let links = md_links(&doc.text);
    for (at, target) in &links {
        if resolve(root, doc, target).is_none() {
            errors.push(format!(
                "{}:{}: link target `{target}` is not a file of the repository",
                doc.rel,
                line_of(&doc.text, *at)
            ));
        }
    }
    for (start, end) in md_mentions(&doc.text) {
        if links.iter().any(|(at, _)| *at == start) {
            continue; // a link target: checked above
        }
        let name = &doc.text[start..end];
        if resolve(root, doc, name).is_none() {
            errors.push(format!(
                "{}:{}: `{name}` is not a file of the repository (relative to the doc's folder, the repository root or docs/)",
                doc.rel,
                line_of(&doc.text, start)
            ));
        }
    }
    errors
}

fn missing_sections(root: &Path, doc: &Doc) -> Vec<String> {
    let mut errors = Vec::new();
    for (start, end) in md_mentions(&doc.text) {
        let name = &doc.text[start..end];
        let cited = cited_sections(&doc.text, end);
        if cited.is_empty() {
            continue;
        }
        let Some(target) = resolve(root, doc, name) else {
            errors.push(format!(
                "{}:{}: cites section {} of `{name}`, which is not a file of the repository",
                doc.rel,
                line_of(&doc.text, start),
                cited.join("-")
            ));
            continue;
        };
        let headings = heading_numbers(&fs::read_to_string(&target).unwrap_or_default());
        for number in cited {
            if !headings.contains(&number) {
                errors.push(format!(
                    "{}:{}: cites `{name}` section {number}, but {} has no heading numbered {number} (it has: {})",
                    doc.rel,
                    line_of(&doc.text, start),
                    target.strip_prefix(root).unwrap_or(&target).display(),
                    if headings.is_empty() { "none".to_string() } else { headings.join(", ") }
                ));
            }
        }
    }
    errors
}

fn report(what: &str, errors: &[String]) {
    assert!(
        errors.is_empty(),
        "{what} ({} found):\n{}",
        errors.len(),
        errors.join("\n")
    );
}

#[test]
fn docs_name_no_file_outside_the_repository() {
    let root = repo_root();
    let errors: Vec<String> = docs(&root).iter().flat_map(outside_references).collect();
    report(
        "docs refer to files that are not in the repository",
        &errors,
    );
}

#[test]
fn md_links_and_mentions_resolve_to_repository_files() {
    let root = repo_root();
    let errors: Vec<String> = docs(&root)
        .iter()
        .flat_map(|d| unresolved_paths(&root, d))
        .collect();
    report(
        "links or .md paths that resolve to no repository file",
        &errors,
    );
}

#[test]
fn cited_section_numbers_are_headings_of_the_cited_file() {
    let root = repo_root();
    let errors: Vec<String> = docs(&root)
        .iter()
        .flat_map(|d| missing_sections(&root, d))
        .collect();
    report("section citations with no such numbered heading", &errors);
}

/// The checks themselves catch what they are meant to catch (so a passing run means clean docs,
/// not a scanner that sees nothing).
#[test]
fn checks_catch_known_bad_text() {
    let root = repo_root();
    let doc = Doc {
        rel: "docs/example.md".to_string(),
        text: [
            "Alignment (harness.md 5), timers (algorithms.md C-5), `shared/spec/wire.md` 5.1.",
            "HPCC (seed 000) and DCQCN (seed",
            "001); an RNG seed 7 is fine.",
            "See [the wire formats](nope.md), docs/missing.md and `docs/models/absent.md`.",
            "Fine: [wire](wire.md), docs/models/hpcc.md, https://example.com/x/README.md, *.md.",
            "INT is in wire.md 5.2 (wrong), docs/wire.md 4 (right), wire.md section 3 (right),",
            "`docs/wire.md` 4, [docs/wire.md](docs/wire.md) 7, docs/dut.md 1.2, docs/dut.md 2.9,",
            "docs/wire.md 1-9, and wire.md",
            "8 across a line break.",
        ]
        .join("\n"),
    };
    let outside = outside_references(&doc);
    assert_eq!(outside.len(), 6, "{outside:#?}"); // harness, algorithms, spec/, shared/, 2 seeds
    assert!(
        outside
            .iter()
            .any(|e| e.starts_with("docs/example.md:2:") && e.contains("seed 001"))
    );

    let unresolved = unresolved_paths(&root, &doc);
    let names: Vec<&str> = [
        "harness.md",
        "algorithms.md",
        "nope.md",
        "missing.md",
        "absent.md",
    ]
    .into_iter()
    .filter(|n| unresolved.iter().any(|e| e.contains(n)))
    .collect();
    assert_eq!(names.len(), 5, "{unresolved:#?}");
    assert_eq!(unresolved.len(), 6, "{unresolved:#?}"); // shared/spec/wire.md too

    let sections = missing_sections(&root, &doc);
    for bad in [
        "section 5.2",
        "section 7",
        "section 2.9",
        "section 9",
        "section 8",
    ] {
        assert!(
            sections.iter().any(|e| e.contains(bad)),
            "{bad} not reported: {sections:#?}"
        );
    }
    // harness.md 5 and shared/spec/wire.md 5.1 (not repository files) are reported too.
    assert_eq!(sections.len(), 7, "{sections:#?}");
    assert!(sections.iter().any(|e| e.starts_with("docs/example.md:8:")));

    assert_eq!(cited_sections("wire.md 5.1-5.3 x", 7), ["5.1", "5.3"]);
    assert_eq!(cited_sections("wire.md section 4: x", 7), ["4"]);
    assert!(cited_sections("wire.md 4KB", 7).is_empty());
    assert!(cited_sections("wire.md.", 7).is_empty());
    assert_eq!(
        heading_numbers("# T\n## 4. Shims\n### 1.2 `hello`\n## Plain\n"),
        ["4", "1.2"]
    );
}
