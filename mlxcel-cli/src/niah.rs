//! `mlxcel niah`: needle-in-a-haystack retrieval per KV mode.

use anyhow::{Context, Result};
use clap::Args;
use mlxcel_models::loader::resolve::shakespeare_text;
use mlxcel_models::niah::{run as run_niah, NeedleParams};
use mlxcel_models::Model;

use crate::kv_args::KvArgs;
use crate::model_args::ModelArgs;

#[derive(Args, Debug)]
pub struct NiahArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub kv: KvArgs,
    /// Haystack text: a UTF-8 file, or shakespeare:<play>.
    #[arg(long, default_value = "shakespeare:hamlet")]
    pub haystack: String,
    /// Prompt lengths in tokens, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1024,2048")]
    pub contexts: Vec<usize>,
    /// Needle depths (0 = start of the text, 1 = end), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0.1,0.5,0.9")]
    pub depths: Vec<f64>,
    /// Seed of the passphrases.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &NiahArgs) -> Result<()> {
    let path = match args.haystack.strip_prefix("shakespeare:") {
        Some(play) => shakespeare_text(play)?,
        None => args.haystack.clone().into(),
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let model = Model::load(args.model.model.as_deref(), &args.model.load_options())?;
    let modes = args.kv.configs_for(model.config().head_dim)?;
    let params = NeedleParams {
        contexts: args.contexts.clone(),
        depths: args.depths.clone(),
        seed: args.seed,
        max_answer_tokens: 16,
    };
    let trials = run_niah(&model, &text, &params, &modes)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&trials)?);
        return Ok(());
    }
    for m in &modes {
        let name = m.mode.name();
        let mine: Vec<_> = trials.iter().filter(|t| t.kv_mode == name).collect();
        let hits = mine.iter().filter(|t| t.hit).count();
        println!("{name:<18} {hits}/{} needles found", mine.len());
        for t in mine {
            println!(
                "  ctx {:>6} depth {:.2}: {} (passphrase {}, answer {:?})",
                t.context_tokens,
                t.depth,
                if t.hit { "hit " } else { "MISS" },
                t.passphrase,
                t.answer
            );
        }
    }
    Ok(())
}
