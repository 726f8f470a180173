//! Errors of mlxcel-core. MLX's C++ exceptions arrive here as [`Error::Mlx`] with MLX's
//! own message, so a caller always learns which operation failed and why.

use thiserror::Error;

/// Everything that can go wrong in mlxcel-core.
#[derive(Debug, Error)]
pub enum Error {
    /// MLX threw a C++ exception; the message is MLX's.
    #[error("MLX error in {op}: {message}")]
    Mlx { op: &'static str, message: String },
    /// The caller passed something the binding can check before reaching MLX.
    #[error("invalid argument to {op}: {message}")]
    InvalidArgument { op: &'static str, message: String },
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    File { path: String, message: String },
}

/// Result alias of mlxcel-core.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn invalid(op: &'static str, message: impl Into<String>) -> Error {
        Error::InvalidArgument {
            op,
            message: message.into(),
        }
    }
}

/// Attaches the operation name to a C++ exception coming through the bridge.
pub(crate) trait MlxContext<T> {
    fn op(self, op: &'static str) -> Result<T>;
}

impl<T> MlxContext<T> for std::result::Result<T, cxx::Exception> {
    fn op(self, op: &'static str) -> Result<T> {
        self.map_err(|e| Error::Mlx {
            op,
            message: e.what().to_string(),
        })
    }
}
