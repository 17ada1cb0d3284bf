//! The results in the formats CI reads beside `results.json`: the assertions as a JUnit XML
//! file ([`junit`]) and the tables as CSV files ([`csv`]).
//!
//! Both are made from a [`Results`](crate::results::Results), so that `volley run` writes
//! them after a run and `volley report` from any `results.json`, a merged one included.

use std::path::{Path, PathBuf};

pub mod csv;
pub mod junit;

/// Why an export could not be written; it names the file or folder.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The file or its folder could not be created or written.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The folder a file goes in could not be created.
    #[error("cannot write {}: cannot create its folder {}: {source}", file.display(), folder.display())]
    Folder {
        /// The file.
        file: PathBuf,
        /// Its folder.
        folder: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A CSV file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// What the csv writer said.
        source: ::csv::Error,
    },
}

impl ExportError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ExportError + '_ {
        move |source| ExportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
