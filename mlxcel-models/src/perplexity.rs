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
    let compare = kv.mode != KvMode::FP16;
    let fp16 = KvConfig {
        mode: KvMode::FP16,
        ..*kv
    };
    let t0 = std::time::Instant::now();
    let (mut nll, mut nll_ref, mut kld, mut agree) = (0f64, 0f64, 0f64, 0f64);
    let mut per_window = Vec::with_capacity(chunks);
    for w in 0..chunks {
        let window = &tokens[w * ctx..(w + 1) * ctx];
        let mut caches = model.new_caches(kv)?;
        let mut ref_caches = if compare {
            Some(model.new_caches(&fp16)?)
        } else {
            None
        };
        let mut window_nll = 0f64;
        let mut pos = 0;
        while pos < ctx - 1 {
            let end = (pos + step.max(1)).min(ctx - 1);
            let targets: Vec<i32> = window[pos + 1..end + 1].iter().map(|&t| t as i32).collect();
            let tgt = Array::from_slice(&targets, &[1, targets.len() as i32, 1])?;
            let lp = log_softmax(
                &model
                    .forward(&window[pos..end], &mut caches, false)?
                    .astype(Dtype::F32)?,
            )?;
            let step_nll = lp
                .take_along_axis(&tgt, -1)?
                .sum(&[0, 1, 2], false)?
                .negative()?;
            window_nll += f64_item(&step_nll)?;
            if let Some(rc) = ref_caches.as_mut() {
                let lr = log_softmax(
                    &model
                        .forward(&window[pos..end], rc, false)?
                        .astype(Dtype::F32)?,
                )?;
                nll_ref -= f64_item(&lr.take_along_axis(&tgt, -1)?.sum(&[0, 1, 2], false)?)?;
                let kl = lr
                    .exp()?
                    .multiply(&lr.subtract(&lp)?)?
                    .sum(&[0, 1, 2], false)?;
                kld += f64_item(&kl)?;
                let same = lr.argmax(&[-1], false)?.equal(&lp.argmax(&[-1], false)?)?;
                agree += f64_item(&same.astype(Dtype::F32)?.sum(&[0, 1], false)?)?;
            }
            pos = end;
        }
        nll += window_nll;
        per_window.push((window_nll / (ctx - 1) as f64).exp());
        tracing::info!("window {}/{chunks}: ppl {:.4}", w + 1, per_window[w]);
    }
    let scored = chunks * (ctx - 1);
    let mean = nll / scored as f64;
    let ppl = mean.exp();
    let vs_fp16 = compare.then(|| {
        let ppl_ref = (nll_ref / scored as f64).exp();
        Fp16Comparison {
            fp16_perplexity: ppl_ref,
            ppl_change_percent: 100.0 * (ppl / ppl_ref - 1.0),
            kld: kld / scored as f64,
            top1_agreement: agree / scored as f64,
        }
    });
    Ok(PerplexityReport {
        kv_mode: kv.mode.name(),
        windows: chunks,
        ctx,
        scored_tokens: scored,
        mean_nll: mean,
        perplexity: ppl,
        per_window_ppl: per_window,
        vs_fp16,
        seconds: t0.elapsed().as_secs_f64(),
    })
}
