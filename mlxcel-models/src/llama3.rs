//! The Llama decoder (Llama 2/3, SmolLM2): RMSNorm, RoPE (with Llama-3 frequency
//! scaling), grouped-query attention, SwiGLU MLP, tied or untied head.
//!
//! Qwen2 and Qwen3 are this same decoder with [`AttentionOptions`] switched on (q/k/v
//! biases, per-head q/k RMSNorm); see `qwen2.rs` and `qwen3.rs`.

use mlxcel_core::build_profile;
use mlxcel_core::kv::KvCache;
use mlxcel_core::rope::RopeSpec;
use mlxcel_core::{Array, Dtype};

use crate::config::{Llama3RopeScaling, ModelConfig, RopeScaling};
use crate::error::{ModelError, Result};
use crate::layers::{Embedding, Linear, Mlp, PreNormed, RmsNorm};
use crate::weights::Weights;

/// Per-family switches of the shared attention block.
#[derive(Debug, Clone, Copy, Default)]
pub struct AttentionOptions {
    /// q/k/v projections carry biases (Qwen2).
    pub qkv_bias: bool,
    /// RMSNorm over each head of q and k before RoPE (Qwen3).
    pub qk_norm: bool,
}

/// RoPE periods `base^(2i/d)` adjusted by Llama-3 scaling, following the definition in
/// HF transformers' `_compute_llama3_parameters` (inverse frequencies divided by `factor`
/// at long wavelengths, interpolated in between).
pub fn llama3_periods(base: f32, dims: usize, s: &Llama3RopeScaling) -> Vec<f32> {
    let low_wavelen = s.original_max_position_embeddings / s.low_freq_factor;
    let high_wavelen = s.original_max_position_embeddings / s.high_freq_factor;
    (0..dims / 2)
        .map(|i| {
            let inv = 1.0 / base.powf(2.0 * i as f32 / dims as f32);
            let wavelen = 2.0 * std::f32::consts::PI / inv;
            let scaled = if wavelen > low_wavelen {
                inv / s.factor
            } else {
                inv
            };
            let medium = wavelen >= high_wavelen && wavelen <= low_wavelen;
            let out = if medium {
                let smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor)
                    / (s.high_freq_factor - s.low_freq_factor);
                (1.0 - smooth) * scaled / s.factor + smooth * scaled
            } else {
                scaled
            };
            1.0 / out
        })
        .collect()
}

/// The rotary embedding of a model's config, as the [`RopeSpec`] the KV caches hand to the
/// fused kernels that rotate q and k themselves (MLX's rope otherwise).
pub fn rope_spec(cfg: &ModelConfig) -> Result<RopeSpec> {
    let dims = cfg.head_dim;
    let periods = match &cfg.rope_scaling {
        RopeScaling::None => None,
        RopeScaling::Llama3(s) => Some(llama3_periods(cfg.rope_theta, dims, s)),
        RopeScaling::Factors(f) => {
            if f.len() != dims / 2 {
                return Err(ModelError::Unsupported(format!(
                    "rope_freqs has {} factors, expected head_dim/2 = {}",
                    f.len(),
                    dims / 2
                )));
            }
            Some(
                f.iter()
                    .enumerate()
                    .map(|(i, m)| cfg.rope_theta.powf(2.0 * i as f32 / dims as f32) * m)
                    .collect(),
            )
        }
    };
    Ok(RopeSpec::new(
        dims as i32,
        cfg.rope_traditional,
        cfg.rope_theta,
        periods,
    )?)
}

/// The q, k and v projections: three layers, or (quantized weights) one stacked layer whose
/// output is sliced, one matmul launch per step instead of three.
enum QkvProjections {
    Separate { q: Linear, k: Linear, v: Linear },
    Stacked { qkv: Linear },
}

impl QkvProjections {
    fn new(q: Linear, k: Linear, v: Linear) -> Result<QkvProjections> {
        Ok(match Linear::stack_rows(&[&q, &k, &v])? {
            Some(qkv) => QkvProjections::Stacked { qkv },
            None => QkvProjections::Separate { q, k, v },
        })
    }

    /// q, k and v of `x [B, L, hidden]` split into heads: `[B, n, 1, hd]` for one position
    /// (decode: the same memory order as `[B, 1, n, hd]`), else `[B, L, n, hd]` (the caller
    /// transposes). The stacked output becomes heads with one reshape and one MLX `split`
    /// (a single node with three view outputs) instead of three slices and three reshapes:
    /// four MLX nodes fewer per layer on the host-bound decode step.
    fn forward_heads(
        &self,
        input: &PreNormed<'_>,
        n: [i32; 3],
        hd: i32,
    ) -> Result<(Array, Array, Array)> {
        let (b, l) = (input.x.dim(0), input.x.dim(1));
        let heads = |t: Array, h: i32| -> Result<Array> {
            Ok(if l == 1 {
                t.reshape(&[b, h, 1, hd])?
            } else {
                t.reshape(&[b, l, h, hd])?
            })
        };
        match self {
            QkvProjections::Separate { q, k, v } => {
                let x = input.normed()?;
                Ok((
                    heads(q.forward(x)?, n[0])?,
                    heads(k.forward(x)?, n[1])?,
                    heads(v.forward(x)?, n[2])?,
                ))
            }
            QkvProjections::Stacked { qkv } => {
                if l == 1 {
                    let shapes = n.map(|h| [b, h, 1, hd]);
                    if let Some([q, k, v]) = qkv.forward_prenormed_parts(input, &shapes)? {
                        return Ok((q, k, v));
                    }
                }
                let y = heads(qkv.forward_prenormed(input)?, n[0] + n[1] + n[2])?;
                let axis = if l == 1 { 1 } else { 2 };
                let parts: [Array; 3] = y
                    .split_at(&[n[0], n[0] + n[1]], axis)?
                    .try_into()
                    .map_err(|p: Vec<Array>| {
                        ModelError::Unsupported(format!(
                            "splitting the stacked qkv gave {} parts, expected 3",
                            p.len()
                        ))
                    })?;
                let [q, k, v] = parts;
                Ok((q, k, v))
            }
        }
    }
}

/// Grouped-query self-attention.
pub struct Attention {
    qkv: QkvProjections,
    o_proj: Linear,
    q_norm: Option<RmsNorm>,
    k_norm: Option<RmsNorm>,
    n_heads: i32,
    n_kv_heads: i32,
    head_dim: i32,
    scale: f32,
}

impl Attention {
    pub fn load(
        w: &mut Weights,
        prefix: &str,
        cfg: &ModelConfig,
        opts: AttentionOptions,
    ) -> Result<Attention> {
        let bias = opts.qkv_bias || cfg.attention_bias;
        let (q_norm, k_norm) = if opts.qk_norm {
            (
                Some(RmsNorm::load(
                    w,
                    &format!("{prefix}.q_norm.weight"),
                    cfg.rms_norm_eps,
                )?),
                Some(RmsNorm::load(
                    w,
                    &format!("{prefix}.k_norm.weight"),
                    cfg.rms_norm_eps,
                )?),
            )
        } else {
            (None, None)
        };
        Ok(Attention {
            qkv: QkvProjections::new(
                Linear::load(w, &format!("{prefix}.q_proj"), bias)?,
                Linear::load(w, &format!("{prefix}.k_proj"), bias)?,
                Linear::load(w, &format!("{prefix}.v_proj"), bias)?,
            )?,
            o_proj: Linear::load(w, &format!("{prefix}.o_proj"), false)?,
            q_norm,
            k_norm,
            n_heads: cfg.num_heads as i32,
            n_kv_heads: cfg.num_kv_heads as i32,
            head_dim: cfg.head_dim as i32,
            scale: 1.0 / (cfg.head_dim as f32).sqrt(),
        })
    }

    /// A decode step's q, with k and v appended to `cache` by the same launch (the stacked
    /// qkv GEMV writing the cache, `MLXCEL_QKV_ENCODE`): one token, a stacked projection, no
    /// q/k norms, and a cache that offers the append ([`KvCache::fused_append_target`]).
    /// `None`, with nothing appended, where that does not apply.
    fn project_and_append(
        &self,
        input: &PreNormed<'_>,
        rope: &RopeSpec,
        cache: &mut dyn KvCache,
    ) -> Result<Option<Array>> {
        let QkvProjections::Stacked { qkv } = &self.qkv else {
            return Ok(None);
        };
        if input.x.dim(1) != 1 || self.q_norm.is_some() || self.k_norm.is_some() {
            return Ok(None);
        }
        let _s = build_profile::span("qkv");
        let b = input.x.dim(0);
        let kv_shape = [b, self.n_kv_heads, 1, self.head_dim];
        let shapes = [[b, self.n_heads, 1, self.head_dim], kv_shape, kv_shape];
        // The cache reserves its position only once the projection takes the parts kernel.
        let target = || Ok(cache.fused_append_target(kv_shape, rope)?);
        match qkv.forward_prenormed_parts_encode(input, &shapes, target, rope)? {
            Some((q, token)) => {
                cache.commit_fused_append(token)?;
                Ok(Some(q))
            }
            None => Ok(None),
        }
    }

    /// `residual + attention(x)` for `x = norm(input) [B, L, hidden]` (the residual add
    /// folded into o_proj where the GEMV kernel takes it); appends this block's K/V to
    /// `cache`.
    pub fn forward(
        &self,
        input: &PreNormed<'_>,
        rope: &RopeSpec,
        cache: &mut dyn KvCache,
        residual: &Array,
    ) -> Result<Array> {
        let l = input.x.dim(1);
        // Heads come as [B, n, 1, hd] for one position (decode): the memory order of
        // [B, 1, n, hd], so no transpose node on the host-bound decode step (ADR 0006);
        // otherwise [B, L, n, hd], transposed to [B, n, L, hd] here after the norm.
        let finish = |t: Array, norm: &Option<RmsNorm>| -> Result<Array> {
            let t = match norm {
                Some(nm) => nm.forward(&t)?,
                None => t,
            };
            Ok(if l == 1 {
                t
            } else {
                t.transpose(&[0, 2, 1, 3])?
            })
        };
        // [B, L, Hq * D]: fused decode paths declare this shape, no reshape node.
        let o = match self.project_and_append(input, rope, cache)? {
            Some(q) => self.attend(cache, &q, rope)?,
            None => {
                let (q, k, v) = {
                    let _s = build_profile::span("qkv");
                    let (q, k, v) = self.qkv.forward_heads(
                        input,
                        [self.n_heads, self.n_kv_heads, self.n_kv_heads],
                        self.head_dim,
                    )?;
                    (
                        finish(q, &self.q_norm)?,
                        finish(k, &self.k_norm)?,
                        finish(v, &None)?,
                    )
                };
                // A decode step whose attention launch writes the cache itself
                // (`MLXCEL_ATTN_APPEND`): no append launch, and the output comes with it.
                let fused = if l == 1 && cache.attention_appends() {
                    let _s = build_profile::span("attention");
                    cache.append_attend_rope_flat(&q, &k, &v, self.scale, rope)?
                } else {
                    None
                };
                match fused {
                    Some(o) => o,
                    None => {
                        // RoPE goes with the cache calls: fused kernels apply it themselves,
                        // other paths run MLX's rope first (same positions: the new block
                        // starts at the cache length).
                        {
                            let _s = build_profile::span("kv append");
                            cache.append_rope(&k, &v, rope)?;
                        }
                        self.attend(cache, &q, rope)?
                    }
                }
            }
        };
        // One o_proj for every path, its span after attention's has ended (nested spans
        // would count o_proj's build twice).
        let _s = build_profile::span("o_proj");
        self.o_proj.forward_residual(&o, residual)
    }

    /// Attention of `q` over `cache` (already holding this block's K/V) as `[B, L, Hq * D]`.
    fn attend(&self, cache: &mut dyn KvCache, q: &Array, rope: &RopeSpec) -> Result<Array> {
        let _s = build_profile::span("attention");
        Ok(cache.attend_rope_flat(q, self.scale, rope)?)
    }
}

/// One pre-norm decoder block.
pub struct DecoderLayer {
    input_norm: RmsNorm,
    attn: Attention,
    post_norm: RmsNorm,
    mlp: Mlp,
}

impl DecoderLayer {
    pub fn load(
        w: &mut Weights,
        i: usize,
        cfg: &ModelConfig,
        opts: AttentionOptions,
    ) -> Result<DecoderLayer> {
        let p = format!("model.layers.{i}");
        Ok(DecoderLayer {
            input_norm: RmsNorm::load(w, &format!("{p}.input_layernorm.weight"), cfg.rms_norm_eps)?,
            attn: Attention::load(w, &format!("{p}.self_attn"), cfg, opts)?,
            post_norm: RmsNorm::load(
                w,
                &format!("{p}.post_attention_layernorm.weight"),
                cfg.rms_norm_eps,
            )?,
            mlp: Mlp::load(w, &format!("{p}.mlp"))?,
        })
    }

    pub fn forward(&self, x: &Array, rope: &RopeSpec, cache: &mut dyn KvCache) -> Result<Array> {
        let h = self
            .attn
            .forward(&PreNormed::new(x, &self.input_norm), rope, cache, x)?;
        let _s = build_profile::span("mlp");
        self.mlp
            .forward_residual(&PreNormed::new(&h, &self.post_norm), &h)
    }
}

/// The whole decoder-only transformer.
pub struct Transformer {
    pub config: ModelConfig,
    embed: Embedding,
    layers: Vec<DecoderLayer>,
    norm: RmsNorm,
    /// None when the head is tied to the embedding.
    lm_head: Option<Linear>,
    rope: RopeSpec,
}

impl Transformer {
    /// The dtype activations (and so the keys and values a cache receives) are computed in.
    pub fn activation_dtype(&self) -> Dtype {
        self.embed.dtype()
    }

    /// Builds the network from `weights`, taking every tensor it needs.
    pub fn load(cfg: &ModelConfig, w: &mut Weights, opts: AttentionOptions) -> Result<Transformer> {
        let embed = Embedding::load(w, "model.embed_tokens.weight")?;
        let layers = (0..cfg.num_layers)
            .map(|i| DecoderLayer::load(w, i, cfg, opts))
            .collect::<Result<Vec<_>>>()?;
        let norm = RmsNorm::load(w, "model.norm.weight", cfg.rms_norm_eps)?;
        let lm_head = if cfg.tie_word_embeddings && !w.contains("lm_head.weight") {
            None
        } else {
            Some(Linear::load(w, "lm_head", false)?)
        };
        let left: Vec<&String> = w.names().collect();
        if !left.is_empty() {
            tracing::debug!("{} unused tensors, e.g. {:?}", left.len(), left.first());
        }
        Ok(Transformer {
            config: cfg.clone(),
            embed,
            layers,
            norm,
            lm_head,
            rope: rope_spec(cfg)?,
        })
    }

    /// Logits for `tokens [B, L]` (int32). Appends to `caches` (one per layer). With
    /// `last_only`, only the last position's logits are computed (`[B, 1, vocab]`).
    pub fn forward(
        &self,
        tokens: &Array,
        caches: &mut [Box<dyn KvCache>],
        last_only: bool,
    ) -> Result<Array> {
        if caches.len() != self.layers.len() {
            return Err(ModelError::Unsupported(format!(
                "{} caches for {} layers",
                caches.len(),
                self.layers.len()
            )));
        }
        let mut h = {
            let _s = build_profile::span("embed + head");
            self.embed.forward(tokens)?
        };
        for (layer, cache) in self.layers.iter().zip(caches.iter_mut()) {
            h = layer.forward(&h, &self.rope, cache.as_mut())?;
        }
        if last_only {
            let l = h.dim(1);
            h = h.slice_axis(1, l - 1, l)?;
        }
        let _s = build_profile::span("embed + head");
        let input = PreNormed::new(&h, &self.norm);
        match &self.lm_head {
            Some(head) => head.forward_prenormed(&input),
            None => self.embed.as_head(input.normed()?),
        }
    }
}
