//! Errors of mlxcel-models. Each names the file and field at fault, so a user learns
//! what to fix without reading code.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ModelError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    BadFile { path: PathBuf, message: String },
    #[error("{}: missing or invalid field '{field}' (expected {expected})", path.display())]
    MissingField {
        path: PathBuf,
        field: String,
        expected: String,
    },
    #[error("{}: unsupported architecture '{arch}' (supported: {supported})", path.display())]
    UnknownArchitecture {
        path: PathBuf,
        arch: String,
        supported: String,
    },
    #[error("{0}")]
    Unsupported(String),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("chat template: {0}")]
    Template(String),
    #[error("model source '{source_name}': {message}")]
    Resolve {
        source_name: String,
        message: String,
    },
    #[error(transparent)]
    Mlx(#[from] mlxcel_core::Error),
}

pub type Result<T> = std::result::Result<T, ModelError>;
