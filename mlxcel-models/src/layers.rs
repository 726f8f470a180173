//! The building blocks shared by every family: linear layers (dense or quantized),
//! embeddings, RMSNorm and the SwiGLU MLP.

use std::cell::OnceCell;

use mlxcel_core::build_profile;
use mlxcel_core::kernels::folded_append::PairTarget;
use mlxcel_core::kernels::quantized_gemv::{self, FoldedNorm, PartsPlan};
use mlxcel_core::mlx::fast::rms_norm;
use mlxcel_core::mlx::ops::{concatenate, Quantized, WeightLayout};
use mlxcel_core::rope::RopeSpec;
use mlxcel_core::{Array, Dtype};

use crate::error::Result;
use crate::weights::{Tensor, Weights};

/// `y = x W^T (+ b)`, with `W` dense `[out, in]` or MLX-affine quantized.
pub struct Linear {
    weight: Tensor,
    bias: Option<Array>,
}

impl Linear {
    /// Takes `<prefix>.weight` (and `<prefix>.bias` when `bias`); a quantized weight is
    /// reordered into the GEMV kernels' tiled layout where `MLXCEL_QMV_TILED` asks for it
    /// (`quantized_gemv::tiles_at_load`), its scale tables too where `MLXCEL_QMV_RING_TABLES`
    /// does (`quantized_gemv::pairs_at_load`).
    pub fn load(w: &mut Weights, prefix: &str, bias: bool) -> Result<Linear> {
        let weight = match w.take(&format!("{prefix}.weight"))? {
            Tensor::Quantized(q) if quantized_gemv::tiles_at_load(&q) => {
                let tiled = quantized_gemv::tile_rows16(&q)?;
                if quantized_gemv::pairs_at_load(&tiled) {
                    Tensor::Quantized(quantized_gemv::tile_tables16(&tiled)?)
                } else {
                    Tensor::Quantized(tiled)
                }
            }
            t => t,
        };
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

    /// One linear layer made of several stacked along the output axis (e.g. the q, k and v
    /// projections): one matmul launch instead of several. Only for quantized weights with
    /// one group size and bit width (what the GPU runs); `None` otherwise, and the caller
    /// keeps the parts. Row `i` of the result is row `i` of the parts in order, so slicing
    /// its output gives each part's output.
    pub fn stack_rows(parts: &[&Linear]) -> Result<Option<Linear>> {
        let mut qs = Vec::with_capacity(parts.len());
        for p in parts {
            match &p.weight {
                Tensor::Quantized(q) => qs.push(q),
                Tensor::Dense(_) => return Ok(None),
            }
        }
        let first = match qs.first() {
            Some(q) => *q,
            None => return Ok(None),
        };
        let same = qs.iter().all(|q| {
            q.bits == first.bits
                && q.group_size == first.group_size
                && q.w.dim(-1) == first.w.dim(-1)
                && q.w.dtype() == first.w.dtype()
                && q.scales.dtype() == first.scales.dtype()
                && q.layout == first.layout
        });
        let biased = parts.iter().filter(|p| p.bias.is_some()).count();
        if !same || (biased != 0 && biased != parts.len()) {
            return Ok(None);
        }
        let cat = |f: &dyn Fn(&Quantized) -> &Array| -> Result<Array> {
            let arrays: Vec<&Array> = qs.iter().map(|q| f(q)).collect();
            Ok(concatenate(&arrays, 0)?)
        };
        let scales = cat(&|q| &q.scales)?;
        // Paired tables: `biases` is `scales` itself (WeightLayout::Rows16TilesPairs).
        let biases = if first.layout == WeightLayout::Rows16TilesPairs {
            scales.clone()
        } else {
            cat(&|q| &q.biases)?
        };
        let weight = Quantized {
            w: cat(&|q| &q.w)?,
            scales,
            biases,
            group_size: first.group_size,
            bits: first.bits,
            // Both layouts order rows in 16-row blocks (parts are whole blocks where tiled).
            layout: first.layout,
        };
        let bias = if biased == 0 {
            None
        } else {
            let b: Vec<&Array> = parts.iter().filter_map(|p| p.bias.as_ref()).collect();
            Some(concatenate(&b, -1)?)
        };
        Ok(Some(Linear {
            weight: Tensor::Quantized(weight),
            bias,
        }))
    }

    /// Output features.
    pub fn out_features(&self) -> i32 {
        match &self.weight {
            Tensor::Dense(w) => w.dim(0),
            Tensor::Quantized(q) => q.w.dim(0),
        }
    }

    /// `forward(x) + residual`, in one launch where the GEMV kernel takes it (a decode step's
    /// o_proj and down_proj: one MLX op and one launch fewer per layer each).
    pub fn forward_residual(&self, x: &Array, residual: &Array) -> Result<Array> {
        if let (Tensor::Quantized(q), None) = (&self.weight, &self.bias) {
            if let Some(y) = quantized_gemv::try_gemv(x, q, Some(residual))? {
                return Ok(y);
            }
        }
        Ok(residual.add(&self.forward(x)?)?)
    }

    /// `forward(norm(x))` for a [`PreNormed`] input: one launch where the GEMV kernel takes
    /// the norm folded in (`MLXCEL_FUSED_NORM`), else the norm (computed once per input) and
    /// then [`Linear::forward`].
    pub fn forward_prenormed(&self, input: &PreNormed<'_>) -> Result<Array> {
        if let (Tensor::Quantized(q), None) = (&self.weight, &self.bias) {
            if let Some(y) = quantized_gemv::try_gemv_rms(input.x, input.norm.folded(), q)? {
                return Ok(y);
            }
        }
        self.forward(input.normed()?)
    }

    /// [`Linear::forward_prenormed`] written as three arrays of `shapes` (a decode step's
    /// stacked q, k and v as `[B, H, 1, D]`) by one launch, where the GEMV kernel takes it
    /// (`MLXCEL_QKV_PARTS`); `None` where not (the caller reshapes and splits one output).
    pub fn forward_prenormed_parts(
        &self,
        input: &PreNormed<'_>,
        shapes: &[[i32; 4]; 3],
    ) -> Result<Option<[Array; 3]>> {
        let Some((q, plan)) = self.parts_plan(input, shapes) else {
            return Ok(None);
        };
        self.prenormed_parts(input, q, &plan, quantized_gemv::try_gemv_parts)
    }

    /// [`Linear::forward_prenormed_parts`] with the decode step's cache append folded into
    /// the launch (`MLXCEL_QKV_ENCODE`): parts 1 and 2 (k, v) are also written into the
    /// cache buffers of the target `target()` reserves, which it is asked for only once this
    /// layer takes the parts kernel. Returns q and the write's token; `None` where the fold
    /// does not apply (the caller projects and appends apart).
    pub fn forward_prenormed_parts_encode(
        &self,
        input: &PreNormed<'_>,
        shapes: &[[i32; 4]; 3],
        target: impl FnOnce() -> Result<Option<PairTarget>>,
        rope: &RopeSpec,
    ) -> Result<Option<(Array, Array)>> {
        let Some((q, plan)) = self.parts_plan(input, shapes) else {
            return Ok(None);
        };
        let Some(target) = target()? else {
            return Ok(None);
        };
        let out = self.prenormed_parts(input, q, &plan, |x, norm, q, plan| {
            quantized_gemv::try_gemv_parts_encode(x, norm, q, plan, &target, Some(rope))
        })?;
        Ok(out.map(|([q, _, _], token)| (q, token)))
    }

    /// This layer's weight and [`PartsPlan`] for `input` written as three arrays of `shapes`;
    /// `None` where the weight or the parts do not take the kernel.
    fn parts_plan<'s>(
        &self,
        input: &PreNormed<'_>,
        shapes: &'s [[i32; 4]; 3],
    ) -> Option<(&Quantized, PartsPlan<'s>)> {
        let (Tensor::Quantized(q), None) = (&self.weight, &self.bias) else {
            return None;
        };
        let plan = quantized_gemv::parts_plan(input.x, q, shapes.each_ref().map(|s| &s[..]))?;
        Some((q, plan))
    }

    /// A parts launch (`launch(x, norm, weight, plan)`) of this layer for `norm(input)`: with
    /// the norm folded into the kernel, or where the fold does not apply on `norm(x)` (made
    /// once).
    fn prenormed_parts<T>(
        &self,
        input: &PreNormed<'_>,
        q: &Quantized,
        plan: &PartsPlan<'_>,
        launch: impl Fn(
            &Array,
            Option<FoldedNorm<'_>>,
            &Quantized,
            &PartsPlan<'_>,
        ) -> mlxcel_core::Result<Option<T>>,
    ) -> Result<Option<T>> {
        if let Some(out) = launch(input.x, Some(input.norm.folded()), q, plan)? {
            return Ok(Some(out));
        }
        Ok(launch(input.normed()?, None, q, plan)?)
    }

    pub fn forward(&self, x: &Array) -> Result<Array> {
        let y = match &self.weight {
            Tensor::Dense(w) => x.matmul(&w.t()?)?,
            Tensor::Quantized(q) => match quantized_gemv::try_gemv(x, q, None)? {
                Some(y) => y,
                None => q.matmul(x, true)?,
            },
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

    /// The dtype of the rows it returns (the model's activation dtype).
    pub fn dtype(&self) -> Dtype {
        match &self.table {
            Tensor::Dense(t) => t.dtype(),
            Tensor::Quantized(q) => q.scales.dtype(),
        }
    }

    /// Rows of the table for `ids` (any shape) -> `ids.shape + [hidden]`.
    pub fn forward(&self, ids: &Array) -> Result<Array> {
        Ok(match &self.table {
            Tensor::Dense(t) => t.take(ids, 0)?,
            Tensor::Quantized(q) => {
                // A decode step's few ids: one kernel on CUDA with MLXCEL_FAST_EMBED=1 (the
                // same bits; measured level, off by default).
                if let Some(rows) = mlxcel_core::kernels::embedding::try_embedding_rows(q, ids)? {
                    return Ok(rows);
                }
                let (scales, biases) = q.untiled_tables()?;
                let rows = Quantized {
                    w: q.untiled()?.take(ids, 0)?,
                    scales: scales.take(ids, 0)?,
                    biases: biases.take(ids, 0)?,
                    group_size: q.group_size,
                    bits: q.bits,
                    layout: WeightLayout::Mlx,
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

    /// This norm as a GEMV kernel's folded staging step.
    pub fn folded(&self) -> FoldedNorm<'_> {
        FoldedNorm {
            weight: &self.weight,
            eps: self.eps,
        }
    }
}

/// The input of a pre-norm block's projections: `x` and the norm to apply to it. Layers
/// whose GEMV kernel folds the norm in read `x` itself; the others share one `norm(x)`,
/// computed at the first call of [`PreNormed::normed`].
pub struct PreNormed<'a> {
    pub x: &'a Array,
    pub norm: &'a RmsNorm,
    normed: OnceCell<Array>,
}

impl<'a> PreNormed<'a> {
    pub fn new(x: &'a Array, norm: &'a RmsNorm) -> PreNormed<'a> {
        PreNormed {
            x,
            norm,
            normed: OnceCell::new(),
        }
    }

    /// `norm(x)` (one MLX node, made once). The build profile reports its time as
    /// "inside: norms", within the part that first needs it (qkv, mlp, embed + head).
    pub fn normed(&self) -> Result<&Array> {
        if let Some(n) = self.normed.get() {
            return Ok(n);
        }
        let n = {
            let _s = build_profile::inner_span("inside: norms");
            self.norm.forward(self.x)?
        };
        Ok(self.normed.get_or_init(|| n))
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

    /// `residual + down(silu(gate(x)) * up(x))` for `x = norm(input)` (the residual add
    /// folded into down_proj where it can be).
    pub fn forward_residual(&self, input: &PreNormed<'_>, residual: &Array) -> Result<Array> {
        self.down.forward_residual(&self.hidden(input)?, residual)
    }

    /// `silu(gate(x)) * up(x)` for `x = norm(input)`: one launch on CUDA for 4-bit weights
    /// (with the norm folded in where `MLXCEL_FUSED_NORM` allows), else the norm and three
    /// ops.
    fn hidden(&self, input: &PreNormed<'_>) -> Result<Array> {
        if let (Tensor::Quantized(g), Tensor::Quantized(u), None, None) = (
            &self.gate.weight,
            &self.up.weight,
            &self.gate.bias,
            &self.up.bias,
        ) {
            if let Some(y) =
                quantized_gemv::try_gemv_silu_mul_rms(input.x, input.norm.folded(), g, u)?
            {
                return Ok(y);
            }
            if let Some(y) = quantized_gemv::try_gemv_silu_mul(input.normed()?, g, u)? {
                return Ok(y);
            }
        }
        let x = input.normed()?;
        let g = self.gate.forward(x)?.silu()?;
        Ok(g.multiply(&self.up.forward(x)?)?)
    }
}
