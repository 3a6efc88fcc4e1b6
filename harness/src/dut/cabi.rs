//! C ABI DUT adapter (a shared library loaded at run time).
