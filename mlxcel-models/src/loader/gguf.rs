//! A GGUF (llama.cpp) file reader: header, metadata and tensor directory, with tensor
//! bytes borrowed from a memory map.
//!
//! Own parser rather than MLX's `load_gguf`: MLX refuses the K-quants that real files
//! use (Q4_K, Q5_K, Q6_K, Q5_0), and a parser of our own can say exactly which tensor of a
//! truncated or malformed file is wrong.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::error::{ModelError, Result};

const MAGIC: u32 = 0x4655_4747; // "GGUF" little-endian

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum GgufValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(Vec<GgufValue>),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl GgufValue {
    /// The value as an unsigned integer, if it is an integer of any width.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            GgufValue::U8(v) => Some(v as u64),
            GgufValue::U16(v) => Some(v as u64),
            GgufValue::U32(v) => Some(v as u64),
            GgufValue::U64(v) => Some(v),
            GgufValue::I8(v) if v >= 0 => Some(v as u64),
            GgufValue::I16(v) if v >= 0 => Some(v as u64),
            GgufValue::I32(v) if v >= 0 => Some(v as u64),
            GgufValue::I64(v) if v >= 0 => Some(v as u64),
            _ => None,
        }
    }

    /// The value as a float, if it is numeric.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            GgufValue::F32(v) => Some(v as f64),
            GgufValue::F64(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[GgufValue]> {
        match self {
            GgufValue::Array(v) => Some(v),
            _ => None,
        }
    }
}

/// ggml tensor types this project understands (numbering from ggml.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgmlType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q4K,
    Q5K,
    Q6K,
    BF16,
    /// A type we do not decode; the number is ggml's.
    Other(u32),
}

impl GgmlType {
    fn from_u32(v: u32) -> GgmlType {
        match v {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            2 => GgmlType::Q4_0,
            3 => GgmlType::Q4_1,
            6 => GgmlType::Q5_0,
            7 => GgmlType::Q5_1,
            8 => GgmlType::Q8_0,
            12 => GgmlType::Q4K,
            13 => GgmlType::Q5K,
            14 => GgmlType::Q6K,
            30 => GgmlType::BF16,
            other => GgmlType::Other(other),
        }
    }

    /// (elements per block, bytes per block), or None for unknown types.
    pub fn block(self) -> Option<(usize, usize)> {
        Some(match self {
            GgmlType::F32 => (1, 4),
            GgmlType::F16 | GgmlType::BF16 => (1, 2),
            GgmlType::Q4_0 => (32, 18),
            GgmlType::Q4_1 => (32, 20),
            GgmlType::Q5_0 => (32, 22),
            GgmlType::Q5_1 => (32, 24),
            GgmlType::Q8_0 => (32, 34),
            GgmlType::Q4K => (256, 144),
            GgmlType::Q5K => (256, 176),
            GgmlType::Q6K => (256, 210),
            GgmlType::Other(_) => return None,
        })
    }

    pub fn name(self) -> String {
        match self {
            GgmlType::Other(n) => format!("ggml type {n}"),
            t => format!("{t:?}"),
        }
    }
}

/// Where one tensor lives in the file.
#[derive(Debug, Clone)]
pub struct GgufTensorInfo {
    pub name: String,
    /// GGUF order: fastest-varying dimension first.
    pub dims: Vec<u64>,
    pub ggml_type: GgmlType,
    /// Absolute byte offset in the file.
    pub offset: usize,
    pub n_bytes: usize,
}

impl GgufTensorInfo {
    /// Row-major shape (slowest first), as MLX and PyTorch write it.
    pub fn shape(&self) -> Vec<i32> {
        self.dims.iter().rev().map(|&d| d as i32).collect()
    }

    pub fn n_elements(&self) -> usize {
        self.dims.iter().product::<u64>() as usize
    }
}

/// An opened GGUF file.
pub struct GgufFile {
    pub path: PathBuf,
    pub version: u32,
    pub metadata: BTreeMap<String, GgufValue>,
    pub tensors: Vec<GgufTensorInfo>,
    map: Mmap,
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    path: &'a Path,
}

impl<'a> Reader<'a> {
    fn err(&self, what: &str) -> ModelError {
        ModelError::BadFile {
            path: self.path.to_path_buf(),
            message: format!("{what} (at byte {})", self.pos),
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(e) => {
                let s = &self.buf[self.pos..e];
                self.pos = e;
                Ok(s)
            }
            None => Err(self.err(&format!("file ends inside {what}: truncated GGUF"))),
        }
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().unwrap()))
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let n = self.u64(what)? as usize;
        if n > self.buf.len() {
            return Err(self.err(&format!("{what}: string length {n} exceeds the file")));
        }
        let bytes = self.take(n, what)?;
        // Token lists can hold bytes that are not UTF-8 (byte fallback pieces).
        Ok(String::from_utf8_lossy(bytes).into_owned())
    }

    fn value(&mut self, ty: u32, what: &str, depth: usize) -> Result<GgufValue> {
        Ok(match ty {
            0 => GgufValue::U8(self.u8(what)?),
            1 => GgufValue::I8(self.u8(what)? as i8),
            2 => GgufValue::U16(self.u16(what)?),
            3 => GgufValue::I16(self.u16(what)? as i16),
            4 => GgufValue::U32(self.u32(what)?),
            5 => GgufValue::I32(self.u32(what)? as i32),
            6 => GgufValue::F32(f32::from_bits(self.u32(what)?)),
            7 => GgufValue::Bool(self.u8(what)? != 0),
            8 => GgufValue::String(self.string(what)?),
            9 => {
                if depth > 2 {
                    return Err(self.err(&format!("{what}: arrays nested too deeply")));
                }
                let inner = self.u32(what)?;
                let n = self.u64(what)? as usize;
                if n > self.buf.len() {
                    return Err(self.err(&format!("{what}: array length {n} exceeds the file")));
                }
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(self.value(inner, what, depth + 1)?);
                }
                GgufValue::Array(v)
            }
            10 => GgufValue::U64(self.u64(what)?),
            11 => GgufValue::I64(self.u64(what)? as i64),
            12 => GgufValue::F64(f64::from_bits(self.u64(what)?)),
            other => return Err(self.err(&format!("{what}: unknown metadata type {other}"))),
        })
    }
}

impl GgufFile {
    /// Opens and indexes a GGUF file; checks that every tensor lies inside the file.
    pub fn open(path: &Path) -> Result<GgufFile> {
        let file = File::open(path).map_err(|e| ModelError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        // SAFETY: the file is opened read-only; mlxcel never writes model files while
        // they are mapped. A concurrent external writer is outside our control.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| ModelError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        let mut r = Reader {
            buf: &map,
            pos: 0,
            path,
        };
        if r.u32("the magic number")? != MAGIC {
            return Err(ModelError::BadFile {
                path: path.to_path_buf(),
                message: "not a GGUF file (magic number is not 'GGUF')".into(),
            });
        }
        let version = r.u32("the version")?;
        if !(2..=3).contains(&version) {
            return Err(r.err(&format!("GGUF version {version} is not supported (2 or 3)")));
        }
        let n_tensors = r.u64("the tensor count")? as usize;
        let n_kv = r.u64("the metadata count")? as usize;
        let mut metadata = BTreeMap::new();
        for i in 0..n_kv {
            let key = r.string(&format!("metadata key #{i}"))?;
            let ty = r.u32(&key)?;
            let v = r.value(ty, &key, 0)?;
            metadata.insert(key, v);
        }
        let mut infos = Vec::with_capacity(n_tensors.min(1 << 16));
        for i in 0..n_tensors {
            let name = r.string(&format!("tensor name #{i}"))?;
            let nd = r.u32(&name)? as usize;
            if nd > 8 {
                return Err(r.err(&format!("tensor '{name}' has {nd} dimensions")));
            }
            let mut dims = Vec::with_capacity(nd);
            for _ in 0..nd {
                dims.push(r.u64(&name)?);
            }
            let ty = GgmlType::from_u32(r.u32(&name)?);
            let off = r.u64(&name)? as usize;
            infos.push((name, dims, ty, off));
        }
        let align = metadata
            .get("general.alignment")
            .and_then(GgufValue::as_u64)
            .unwrap_or(32) as usize;
        if align == 0 || !align.is_power_of_two() {
            return Err(r.err(&format!("general.alignment {align} is not a power of two")));
        }
        let data_start = r.pos.div_ceil(align) * align;
        let mut tensors = Vec::with_capacity(infos.len());
        for (name, dims, ggml_type, off) in infos {
            let n: u64 = dims.iter().product();
            let n_bytes = match ggml_type.block() {
                Some((per, bytes)) => {
                    if !n.is_multiple_of(per as u64) {
                        return Err(ModelError::BadFile {
                            path: path.to_path_buf(),
                            message: format!(
                                "tensor '{name}': {n} elements is not a whole number of {} blocks",
                                ggml_type.name()
                            ),
                        });
                    }
                    (n / per as u64) as usize * bytes
                }
                None => 0,
            };
            let offset = data_start + off;
            if offset
                .checked_add(n_bytes)
                .is_none_or(|end| end > map.len())
            {
                return Err(ModelError::BadFile {
                    path: path.to_path_buf(),
                    message: format!(
                        "tensor '{name}' ({} bytes at offset {offset}) extends past the end of the \
                         file ({} bytes): truncated GGUF",
                        n_bytes,
                        map.len()
                    ),
                });
            }
            tensors.push(GgufTensorInfo {
                name,
                dims,
                ggml_type,
                offset,
                n_bytes,
            });
        }
        Ok(GgufFile {
            path: path.to_path_buf(),
            version,
            metadata,
            tensors,
            map,
        })
    }

    /// The raw bytes of one tensor.
    pub fn data(&self, t: &GgufTensorInfo) -> &[u8] {
        &self.map[t.offset..t.offset + t.n_bytes]
    }

    pub fn tensor(&self, name: &str) -> Option<&GgufTensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.metadata.get(key)
    }

    /// A metadata string, or a clear error naming the key.
    pub fn get_str(&self, key: &str) -> Result<&str> {
        self.get(key)
            .and_then(GgufValue::as_str)
            .ok_or_else(|| self.missing(key, "a string"))
    }

    /// A metadata integer, or a clear error naming the key.
    pub fn get_u64(&self, key: &str) -> Result<u64> {
        self.get(key)
            .and_then(GgufValue::as_u64)
            .ok_or_else(|| self.missing(key, "an integer"))
    }

    /// A metadata float, or a clear error naming the key.
    pub fn get_f64(&self, key: &str) -> Result<f64> {
        self.get(key)
            .and_then(GgufValue::as_f64)
            .ok_or_else(|| self.missing(key, "a number"))
    }

    fn missing(&self, key: &str, what: &str) -> ModelError {
        ModelError::MissingField {
            path: self.path.clone(),
            field: key.to_string(),
            expected: what.to_string(),
        }
    }
}
