//! [`Weights`]: a model's tensors by HF name, each dense or MLX-affine-quantized, and
//! [`WeightFormat`]: how to hold them in memory.

use std::collections::HashMap;

use mlxcel_core::mlx::ops::Quantized;
use mlxcel_core::{Array, Dtype};

use crate::error::{ModelError, Result};

/// One stored tensor.
pub enum Tensor {
    Dense(Array),
    Quantized(Quantized),
}

impl Tensor {
    /// Bytes held in memory.
    pub fn nbytes(&self) -> usize {
        match self {
            Tensor::Dense(a) => a.nbytes(),
            Tensor::Quantized(q) => q.nbytes(),
        }
    }
}

/// How weights are held at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightFormat {
    /// Everything dequantized to this dtype. Fastest on MLX's CPU backend, whose
    /// quantized matmul is slow, and exact for the reference tests.
    Dense(Dtype),
    /// Quantized tensors stay MLX-affine quantized (scales in this dtype); dense ones are
    /// cast to it. What the GPU path uses.
    Native(Dtype),
}

impl WeightFormat {
    pub fn dtype(self) -> Dtype {
        match self {
            WeightFormat::Dense(d) | WeightFormat::Native(d) => d,
        }
    }

    /// Dense f32 on the CPU, native f16 with a GPU.
    pub fn auto() -> WeightFormat {
        if mlxcel_core::mlx::device::gpu_available() {
            WeightFormat::Native(Dtype::F16)
        } else {
            WeightFormat::Dense(Dtype::F32)
        }
    }
}

/// The tensors of a model, keyed by HF names (`model.layers.0.self_attn.q_proj.weight`).
pub struct Weights {
    map: HashMap<String, Tensor>,
    /// Where they came from, for error messages.
    pub source: String,
}

impl Weights {
    pub fn new(source: impl Into<String>) -> Weights {
        Weights {
            map: HashMap::new(),
            source: source.into(),
        }
    }

    pub fn insert(&mut self, name: impl Into<String>, t: Tensor) {
        self.map.insert(name.into(), t);
    }

    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.map.keys()
    }

    /// Total bytes of all tensors.
    pub fn nbytes(&self) -> usize {
        self.map.values().map(Tensor::nbytes).sum()
    }

    /// Removes and returns a tensor, or errors naming it and the source.
    pub fn take(&mut self, name: &str) -> Result<Tensor> {
        self.map.remove(name).ok_or_else(|| {
            ModelError::Unsupported(format!("{}: missing tensor '{name}'", self.source))
        })
    }

    /// A tensor that must be dense (norms, biases).
    pub fn take_dense(&mut self, name: &str) -> Result<Array> {
        match self.take(name)? {
            Tensor::Dense(a) => Ok(a),
            Tensor::Quantized(q) => Ok(q.dequantize(q.scales.dtype())?),
        }
    }
}
