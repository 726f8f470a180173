//! Perplexity over non-overlapping windows of a text, and, for a compressed KV mode, the
//! KL divergence of its next-token distributions from those of the fp16 cache on the
//! same windows (computed in the same run, position by position).

use mlxcel_core::kv::KvMode;
use mlxcel_core::{Array, Dtype};

use crate::error::{ModelError, Result};
use crate::model::{KvConfig, Model};

/// The fp16-cache comparison of a compressed mode.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Fp16Comparison {
    pub fp16_perplexity: f64,
    /// `100 * (ppl / ppl_fp16 - 1)`.
    pub ppl_change_percent: f64,
    /// Mean over scored positions of `KL(p_fp16 || p_mode)` in nats.
    pub kld: f64,
    /// Fraction of positions whose argmax agrees with fp16's.
    pub top1_agreement: f64,
}

/// Result of a perplexity run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PerplexityReport {
    pub kv_mode: String,
    pub windows: usize,
    pub ctx: usize,
    /// Tokens scored (each window scores ctx - 1 next-token predictions).
    pub scored_tokens: usize,
    pub mean_nll: f64,
    pub perplexity: f64,
    pub per_window_ppl: Vec<f64>,
    pub vs_fp16: Option<Fp16Comparison>,
    pub seconds: f64,
}

fn log_softmax(logits: &Array) -> Result<Array> {
    Ok(logits.subtract(&logits.logsumexp(&[-1], true)?)?)
}

fn f64_item(a: &Array) -> Result<f64> {
    Ok(a.astype(Dtype::F32)?.item::<f32>()? as f64)
}

/// Scores `tokens` in `chunks` windows of `ctx` tokens (the text must hold them all),
/// running each window through the KV cache in steps of `step` tokens. When `kv` is not
/// fp16, an fp16 cache runs alongside and the report carries the comparison.
pub fn perplexity(
    model: &Model,
    tokens: &[u32],
    ctx: usize,
    chunks: usize,
    step: usize,
    kv: &KvConfig,
) -> Result<PerplexityReport> {
    let mut reports = perplexity_modes(model, tokens, ctx, chunks, step, std::slice::from_ref(kv))?;
    Ok(reports.remove(0))
}

struct Accum {
    nll: f64,
    kld: f64,
    agree: f64,
    window_nll: f64,
    per_window: Vec<f64>,
}

/// [`perplexity`] for several modes in one pass: the fp16 cache runs once per window and
/// every mode is compared with it position by position. Returns one report per mode, in
/// order (an fp16 entry gets no comparison).
pub fn perplexity_modes(
    model: &Model,
    tokens: &[u32],
    ctx: usize,
    chunks: usize,
    step: usize,
    modes: &[KvConfig],
) -> Result<Vec<PerplexityReport>> {
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
    let fp16 = KvConfig {
        mode: KvMode::FP16,
        ..modes.first().copied().unwrap_or_default()
    };
    let t0 = std::time::Instant::now();
    let new_acc = || Accum {
        nll: 0.0,
        kld: 0.0,
        agree: 0.0,
        window_nll: 0.0,
        per_window: Vec::new(),
    };
    let mut base = new_acc();
    let mut accs: Vec<Accum> = modes.iter().map(|_| new_acc()).collect();
    for w in 0..chunks {
        let window = &tokens[w * ctx..(w + 1) * ctx];
        let mut base_caches = model.new_caches(&fp16)?;
        let mut caches = modes
            .iter()
            .map(|m| {
                if m.mode == KvMode::FP16 {
                    Ok(None)
                } else {
                    model.new_caches(m).map(Some)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        base.window_nll = 0.0;
        accs.iter_mut().for_each(|a| a.window_nll = 0.0);
        let mut pos = 0;
        while pos < ctx - 1 {
            let end = (pos + step.max(1)).min(ctx - 1);
            let targets: Vec<i32> = window[pos + 1..end + 1].iter().map(|&t| t as i32).collect();
            let tgt = Array::from_slice(&targets, &[1, targets.len() as i32, 1])?;
            let lr = log_softmax(
                &model
                    .forward(&window[pos..end], &mut base_caches, false)?
                    .astype(Dtype::F32)?,
            )?;
            let base_nll = -f64_item(&lr.take_along_axis(&tgt, -1)?.sum(&[0, 1, 2], false)?)?;
            base.window_nll += base_nll;
            let pr = lr.exp()?;
            let top_r = lr.argmax(&[-1], false)?;
            for (acc, cache) in accs.iter_mut().zip(caches.iter_mut()) {
                let Some(c) = cache else {
                    acc.window_nll += base_nll;
                    continue;
                };
                let lp = log_softmax(
                    &model
                        .forward(&window[pos..end], c, false)?
                        .astype(Dtype::F32)?,
                )?;
                acc.window_nll -= f64_item(&lp.take_along_axis(&tgt, -1)?.sum(&[0, 1, 2], false)?)?;
                acc.kld += f64_item(&pr.multiply(&lr.subtract(&lp)?)?.sum(&[0, 1, 2], false)?)?;
                let same = top_r.equal(&lp.argmax(&[-1], false)?)?;
                acc.agree += f64_item(&same.astype(Dtype::F32)?.sum(&[0, 1], false)?)?;
            }
            pos = end;
        }
        for a in std::iter::once(&mut base).chain(accs.iter_mut()) {
            a.nll += a.window_nll;
            a.per_window.push((a.window_nll / (ctx - 1) as f64).exp());
        }
        tracing::info!(
            "window {}/{chunks}: fp16 ppl {:.4}",
            w + 1,
            base.per_window[w]
        );
    }
    let scored = chunks * (ctx - 1);
    let ppl_ref = (base.nll / scored as f64).exp();
    let seconds = t0.elapsed().as_secs_f64();
    Ok(modes
        .iter()
        .zip(accs)
        .map(|(m, a)| {
            let mean = a.nll / scored as f64;
            let ppl = mean.exp();
            PerplexityReport {
                kv_mode: m.mode.name(),
                windows: chunks,
                ctx,
                scored_tokens: scored,
                mean_nll: mean,
                perplexity: ppl,
                per_window_ppl: a.per_window,
                vs_fp16: (m.mode != KvMode::FP16).then(|| Fp16Comparison {
                    fp16_perplexity: ppl_ref,
                    ppl_change_percent: 100.0 * (ppl / ppl_ref - 1.0),
                    kld: a.kld / scored as f64,
                    top1_agreement: a.agree / scored as f64,
                }),
                seconds,
            }
        })
        .collect())
}
