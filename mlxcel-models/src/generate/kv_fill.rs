//! How the prompt reaches the KV cache. Normally the model runs over it (prefill). For
//! decode-speed benchmarks at long context the prefill is most of a run's time (27 s of ~45
//! s for Llama-3-8B at 128K on the H200), so `random-kv` writes random keys and values for
//! all but the last prompt position straight into the caches, through the same append path
//! a prefill uses, and runs the model on the last token only. Decode then reads caches of
//! the same length, format and layout as after a real prefill, so its speed is the same;
//! its tokens are meaningless.

use mlxcel_core::kv::KvCache;
use mlxcel_core::mlx::array::eval_all;
use mlxcel_core::mlx::random;

use crate::error::Result;
use crate::model::Model;

/// How the prompt fills the KV cache (`mlxcel generate --prompt-fill`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptFill {
    /// Run the model over the prompt.
    #[default]
    Model,
    /// Random keys and values for all but the last prompt position; the model runs on the
    /// last token (benchmarks only).
    RandomKv,
}

/// Appends `len` positions of standard-normal keys and values (the model's activation
/// dtype) to every layer's cache, `chunk` positions per append. After each chunk one query
/// per layer attends over the cache and is evaluated: the caches have no eval of their own,
/// and this forces every pending append (as a prefill chunk's logits do), so temporaries
/// stay one chunk large. Deterministic in `seed`. `progress` hears after each chunk.
pub fn fill_random(
    model: &Model,
    caches: &mut [Box<dyn KvCache>],
    len: usize,
    chunk: usize,
    seed: u64,
    progress: Option<&super::Progress>,
) -> Result<()> {
    let cfg = model.config();
    let (hq, hkv, d) = (
        cfg.num_heads as i32,
        cfg.num_kv_heads as i32,
        cfg.head_dim as i32,
    );
    let scale = 1.0 / (cfg.head_dim as f32).sqrt();
    let dtype = model.net.activation_dtype();
    let chunk = chunk.max(1);
    let mut start = 0;
    let mut draw = 0u64;
    while start < len {
        let l = chunk.min(len - start) as i32;
        let mut probes = Vec::with_capacity(caches.len());
        for cache in caches.iter_mut() {
            let mut next = |shape: &[i32]| {
                draw += 1;
                random::normal(shape, dtype, Some(&random::key(seed ^ (draw << 20))?))
            };
            let (k, v) = (next(&[1, hkv, l, d])?, next(&[1, hkv, l, d])?);
            cache.append(&k, &v)?;
            probes.push(cache.attend(&next(&[1, hq, 1, d])?, scale)?);
        }
        eval_all(&probes.iter().collect::<Vec<_>>())?;
        start += l as usize;
        if let Some(p) = progress {
            p.report(start, len);
        }
    }
    Ok(())
}
