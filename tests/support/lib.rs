//! Support for the cross-crate test suites.
