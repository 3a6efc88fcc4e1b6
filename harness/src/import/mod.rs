//! Importers: other tools' outputs turned into events files with manifests (docs/import.md).
//!
//! Today: the ns-3 simulator published with the HPCC paper ([`ns3`]).

use std::path::PathBuf;

pub mod ns3;
pub mod pcap;

/// Why an import failed (exit status 2). Every variant names the file and where in it.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A text input (config, topology, flow, trace list) has a bad line.
    #[error("{}:{line}: {message}", path.display())]
    Line {
        /// File.
        path: PathBuf,
        /// Line number, from 1.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A binary input (`mix.tr`) is bad at a byte offset.
    #[error("{}: byte {offset}: {message}", path.display())]
    Binary {
        /// File.
        path: PathBuf,
        /// Offset of the record or field, bytes from the start of the file.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// File.
        path: PathBuf,
        /// OS error.
        source: std::io::Error,
    },
    /// The run used something the harness does not model (a CC mode, a missing file).
    #[error("{0}")]
    Unsupported(String),
    /// The inputs are readable, but importing them would lose something or give nothing (a
    /// flow of the flow file without events, no host traced, a trace without records). Nothing
    /// is written.
    #[error("{message}")]
    Incomplete {
        /// What would be lost, and the likeliest cause.
        message: String,
        /// What to change (the config line, the trace list, the flow file).
        todo: String,
    },
}

impl ImportError {
    /// What to do about the error, when the error knows better than a generic hint.
    pub fn todo(&self) -> Option<&str> {
        match self {
            ImportError::Incomplete { todo, .. } => Some(todo),
            _ => None,
        }
    }
}
