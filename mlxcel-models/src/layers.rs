//! The building blocks shared by every family: linear layers (dense or quantized),
//! embeddings, RMSNorm and the SwiGLU MLP.

use mlxcel_core::mlx::fast::rms_norm;
use mlxcel_core::mlx::ops::Quantized;
use mlxcel_core::Array;

use crate::error::Result;
use crate::weights::{Tensor, Weights};

/// `y = x W^T (+ b)`, with `W` dense `[out, in]` or MLX-affine quantized.
pub struct Linear {
    weight: Tensor,
    bias: Option<Array>,
}

impl Linear {
    /// Takes `<prefix>.weight` (and `<prefix>.bias` when `bias`).
    pub fn load(w: &mut Weights, prefix: &str, bias: bool) -> Result<Linear> {
        let weight = w.take(&format!("{prefix}.weight"))?;
        let bias = if bias {
            Some(w.take_dense(&format!("{prefix}.bias"))?)
        } else {
            None
        };
        Ok(Linear { weight, bias })
    }

    pub fn from_tensor(weight: Tensor) -> Linear {
        Linear { weight, bias: None }
    }

    pub fn forward(&self, x: &Array) -> Result<Array> {
        let y = match &self.weight {
            Tensor::Dense(w) => x.matmul(&w.t()?)?,
            Tensor::Quantized(q) => q.matmul(x, true)?,
        };
        Ok(match &self.bias {
            Some(b) => y.add(b)?,
            None => y,
        })
    }
}

/// Token embedding table `[vocab, hidden]`, dense or quantized; doubles as the output
/// head when the model ties them.
pub struct Embedding {
    table: Tensor,
}

impl Embedding {
    pub fn load(w: &mut Weights, name: &str) -> Result<Embedding> {
        Ok(Embedding {
            table: w.take(name)?,
        })
    }

    /// Rows of the table for `ids` (any shape) -> `ids.shape + [hidden]`.
    pub fn forward(&self, ids: &Array) -> Result<Array> {
        Ok(match &self.table {
            Tensor::Dense(t) => t.take(ids, 0)?,
            Tensor::Quantized(q) => {
                let rows = Quantized {
                    w: q.w.take(ids, 0)?,
                    scales: q.scales.take(ids, 0)?,
                    biases: q.biases.take(ids, 0)?,
                    group_size: q.group_size,
                    bits: q.bits,
                };
                rows.dequantize(q.scales.dtype())?
            }
        })
    }

    /// `x E^T`: logits through the tied table.
    pub fn as_head(&self, x: &Array) -> Result<Array> {
        Ok(match &self.table {
            Tensor::Dense(t) => x.matmul(&t.t()?)?,
            Tensor::Quantized(q) => q.matmul(x, true)?,
        })
    }
}

/// RMSNorm with a learned scale.
pub struct RmsNorm {
    weight: Array,
    eps: f32,
}

impl RmsNorm {
    pub fn load(w: &mut Weights, name: &str, eps: f32) -> Result<RmsNorm> {
        Ok(RmsNorm {
            weight: w.take_dense(name)?,
            eps,
        })
    }

    pub fn forward(&self, x: &Array) -> Result<Array> {
        Ok(rms_norm(x, Some(&self.weight), self.eps)?)
    }
}

/// SwiGLU feed-forward: `down(silu(gate(x)) * up(x))`.
pub struct Mlp {
    gate: Linear,
    up: Linear,
    down: Linear,
}

impl Mlp {
    pub fn load(w: &mut Weights, prefix: &str) -> Result<Mlp> {
        Ok(Mlp {
            gate: Linear::load(w, &format!("{prefix}.gate_proj"), false)?,
            up: Linear::load(w, &format!("{prefix}.up_proj"), false)?,
            down: Linear::load(w, &format!("{prefix}.down_proj"), false)?,
        })
    }

    pub fn forward(&self, x: &Array) -> Result<Array> {
        let g = self.gate.forward(x)?.silu()?;
        self.down.forward(&g.multiply(&self.up.forward(x)?)?)
    }
}
