//! Perplexity over non-overlapping windows of a text.

use mlxcel_core::Dtype;

use crate::error::{ModelError, Result};
use crate::model::Model;

/// Result of a perplexity run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PerplexityReport {
    pub windows: usize,
    pub ctx: usize,
    /// Tokens scored (each window scores ctx - 1 next-token predictions).
    pub scored_tokens: usize,
    pub mean_nll: f64,
    pub perplexity: f64,
    pub per_window_ppl: Vec<f64>,
    pub seconds: f64,
}

/// Scores `tokens` in `chunks` windows of `ctx` tokens (the text must hold them all),
/// running each window through the KV cache in steps of `step` tokens.
pub fn perplexity(
    model: &Model,
    tokens: &[u32],
    ctx: usize,
    chunks: usize,
    step: usize,
) -> Result<PerplexityReport> {
    if ctx < 2 || chunks == 0 {
        return Err(ModelError::Unsupported(
            "perplexity needs --ctx >= 2 and --chunks >= 1".into(),
        ));
    }
    if tokens.len() < ctx * chunks {
        return Err(ModelError::Unsupported(format!(
            "the text has {} tokens, fewer than --ctx {ctx} x --chunks {chunks} = {}",
            tokens.len(),
            ctx * chunks
        )));
    }
    let t0 = std::time::Instant::now();
    let mut total_nll = 0f64;
    let mut per_window = Vec::with_capacity(chunks);
    for w in 0..chunks {
        let window = &tokens[w * ctx..(w + 1) * ctx];
        let mut caches = model.new_caches();
        let mut nll = 0f64;
        let mut pos = 0;
        while pos < ctx - 1 {
            let end = (pos + step.max(1)).min(ctx - 1);
            let logits = model
                .forward(&window[pos..end], &mut caches, false)?
                .astype(Dtype::F32)?;
            let targets: Vec<i32> = window[pos + 1..end + 1].iter().map(|&t| t as i32).collect();
            let tgt = mlxcel_core::Array::from_slice(&targets, &[1, targets.len() as i32, 1])?;
            let lse = logits.logsumexp(&[-1], true)?;
            let picked = logits.take_along_axis(&tgt, -1)?;
            let s = lse
                .subtract(&picked)?
                .sum(&[0, 1, 2], false)?
                .item::<f32>()?;
            nll += s as f64;
            pos = end;
        }
        per_window.push((nll / (ctx - 1) as f64).exp());
        total_nll += nll;
        tracing::info!("window {}/{chunks}: ppl {:.4}", w + 1, per_window[w]);
    }
    let scored = chunks * (ctx - 1);
    let mean = total_nll / scored as f64;
    Ok(PerplexityReport {
        windows: chunks,
        ctx,
        scored_tokens: scored,
        mean_nll: mean,
        perplexity: mean.exp(),
        per_window_ppl: per_window,
        seconds: t0.elapsed().as_secs_f64(),
    })
}
