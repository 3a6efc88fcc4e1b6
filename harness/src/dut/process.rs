//! External-process DUT adapter (JSON Lines over stdin/stdout).
