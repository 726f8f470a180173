//! Reading and writing tensors: safetensors and GGUF through MLX's loaders.
//!
//! MLX's GGUF loader maps F32/F16/BF16 tensors directly and Q4_0/Q4_1/Q8_0 onto its
//! affine quantization (`name`, `name.scales`, `name.biases`); other GGUF quantization
//! types make it fail with an error, which comes back here as `Err`.

use std::path::Path;

use cxx::UniquePtr;

use super::array::{array_vec, Array};
use super::ffi::bridge as ffi;
use crate::error::{Error, MlxContext, Result};

/// One metadata value of a tensor file.
#[derive(Debug, Clone)]
pub enum MetaValue {
    String(String),
    Strings(Vec<String>),
    Array(Array),
}

/// The tensors and metadata of one file.
pub struct TensorFile {
    inner: UniquePtr<ffi::TensorFile>,
    path: String,
}

fn path_str(path: &Path) -> Result<String> {
    if !path.is_file() {
        return Err(Error::File {
            path: path.display().to_string(),
            message: "no such file".into(),
        });
    }
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| Error::File {
            path: path.display().to_string(),
            message: "path is not valid UTF-8".into(),
        })
}

impl std::fmt::Debug for TensorFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TensorFile({})", self.path)
    }
}

impl TensorFile {
    /// Reads a `.safetensors` file (metadata values are strings).
    pub fn load_safetensors(path: &Path) -> Result<TensorFile> {
        let p = path_str(path)?;
        let inner = ffi::load_safetensors(&p).map_err(|e| Error::File {
            path: p.clone(),
            message: format!("cannot read as safetensors: {}", e.what()),
        })?;
        Ok(TensorFile { inner, path: p })
    }

    /// Reads a `.gguf` file.
    pub fn load_gguf(path: &Path) -> Result<TensorFile> {
        let p = path_str(path)?;
        let inner = ffi::load_gguf(&p).map_err(|e| Error::File {
            path: p.clone(),
            message: format!("cannot read as GGUF: {}", e.what()),
        })?;
        Ok(TensorFile { inner, path: p })
    }

    fn raw(&self) -> &ffi::TensorFile {
        self.inner
            .as_ref()
            .expect("tensor file handle is never null")
    }

    /// The path it was read from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Tensor names, sorted.
    pub fn names(&self) -> Vec<String> {
        ffi::tensor_file_names(self.raw())
    }

    /// One tensor (lazy: its bytes are read when it is first evaluated).
    pub fn get(&self, name: &str) -> Result<Array> {
        ffi::tensor_file_get(self.raw(), name)
            .map(Array::from_ptr)
            .map_err(|_| Error::File {
                path: self.path.clone(),
                message: format!("no tensor named '{name}'"),
            })
    }

    /// Metadata keys, sorted.
    pub fn metadata_keys(&self) -> Vec<String> {
        ffi::tensor_file_meta_keys(self.raw())
    }

    /// One metadata value, if present.
    pub fn metadata(&self, key: &str) -> Result<Option<MetaValue>> {
        let f = self.raw();
        Ok(match ffi::tensor_file_meta_kind(f, key) {
            1 => Some(MetaValue::String(
                ffi::tensor_file_meta_string(f, key).op("metadata")?,
            )),
            2 => Some(MetaValue::Strings(
                ffi::tensor_file_meta_strings(f, key).op("metadata")?,
            )),
            3 => Some(MetaValue::Array(Array::from_ptr(
                ffi::tensor_file_meta_array(f, key).op("metadata")?,
            ))),
            _ => None,
        })
    }
}

fn split_named(tensors: &[(&str, &Array)]) -> (Vec<String>, UniquePtr<ffi::ArrayVec>) {
    let names = tensors.iter().map(|(n, _)| n.to_string()).collect();
    let arrays: Vec<&Array> = tensors.iter().map(|(_, a)| *a).collect();
    (names, array_vec(&arrays))
}

/// Writes tensors (and string metadata) to a `.safetensors` file.
pub fn save_safetensors(
    path: &Path,
    tensors: &[(&str, &Array)],
    metadata: &[(&str, &str)],
) -> Result<()> {
    let p = path.to_string_lossy().to_string();
    let (names, arrays) = split_named(tensors);
    let keys = metadata.iter().map(|(k, _)| k.to_string()).collect();
    let values = metadata.iter().map(|(_, v)| v.to_string()).collect();
    ffi::save_safetensors(&p, names, &arrays, keys, values).map_err(|e| Error::File {
        path: p,
        message: format!("cannot write safetensors: {}", e.what()),
    })
}

/// Writes tensors and metadata to a `.gguf` file. Numeric metadata goes in as arrays
/// (a 0-d or 1-d array per key).
pub fn save_gguf(
    path: &Path,
    tensors: &[(&str, &Array)],
    string_meta: &[(&str, &str)],
    array_meta: &[(&str, &Array)],
) -> Result<()> {
    let p = path.to_string_lossy().to_string();
    let (names, arrays) = split_named(tensors);
    let skeys = string_meta.iter().map(|(k, _)| k.to_string()).collect();
    let svals = string_meta.iter().map(|(_, v)| v.to_string()).collect();
    let (akeys, avals) = split_named(array_meta);
    ffi::save_gguf(&p, names, &arrays, skeys, svals, akeys, &avals).map_err(|e| Error::File {
        path: p,
        message: format!("cannot write GGUF: {}", e.what()),
    })
}
