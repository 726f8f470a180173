//! `mlxcel generate`: stream a completion for a prompt.

use std::io::{Read, Write};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use mlxcel_core::build_profile;
use mlxcel_core::kv::KvMode;
use mlxcel_core::mlx::graph_limits;
use mlxcel_models::generate::{generate, GenerateParams, GenerationStats, PromptFill};
use mlxcel_models::tokenizer::chat::{apply_chat_template_with, Message};
use mlxcel_models::Model;
use rand::{Rng, SeedableRng};

use crate::kv_args::KvArgs;
use crate::model_args::ModelArgs;
use crate::sampling_args::SamplingArgs;

#[derive(Args, Debug)]
pub struct GenerateArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub kv: KvArgs,
    /// The prompt (sent through the model's chat template unless --no-chat-template).
    #[arg(long, short = 'p')]
    pub prompt: Option<String>,
    /// Read the prompt from this file (`-`: stdin), for prompts longer than a command line
    /// takes (a long document: Linux caps one argument at 128 KiB). With --prompt too, the
    /// message is the file's text, a blank line, then --prompt (a document, then a question).
    #[arg(long, value_name = "PATH")]
    pub prompt_file: Option<std::path::PathBuf>,
    /// Use N random prompt tokens instead of --prompt (required for synthetic models).
    #[arg(long)]
    pub prompt_tokens: Option<usize>,
    /// System message for the chat template.
    #[arg(long)]
    pub system: Option<String>,
    /// Send the prompt as raw text, without the chat template.
    #[arg(long)]
    pub no_chat_template: bool,
    /// Extra chat-template variables as a JSON object, e.g. '{"enable_thinking": false}'
    /// (Qwen3: no reasoning block).
    #[arg(long, value_name = "JSON", value_parser = crate::template_vars::parse, conflicts_with = "no_chat_template")]
    pub chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
    /// Maximum number of new tokens.
    #[arg(long, default_value_t = 256)]
    pub max_tokens: usize,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Stop when this text appears (repeatable).
    #[arg(long)]
    pub stop: Vec<String>,
    /// Do not stop at end-of-sequence tokens.
    #[arg(long)]
    pub ignore_eos: bool,
    /// Prompt tokens per prefill step (bounds memory on long prompts).
    #[arg(long, default_value_t = 512)]
    pub prefill_chunk: usize,
    /// How the prompt reaches the KV cache. `random-kv` is for decode-speed benchmarks: the
    /// cache gets random keys and values for all but the last prompt position (through the
    /// same appends as a prefill, in --prefill-chunk pieces) and the model runs on the last
    /// token only, so a 128K-context decode starts in seconds instead of a full prefill. The
    /// decode reads caches of the same size and format, so its speed is that of a real
    /// prefill; the generated tokens are meaningless. Needs --prompt-tokens.
    #[arg(long, value_enum, default_value_t = PromptFillArg::Model)]
    pub prompt_fill: PromptFillArg,
    /// Print timing, memory and KV-cache numbers to stderr after the answer.
    #[arg(long)]
    pub profile: bool,
    /// Print one JSON object (text, token ids, stats) instead of streaming text.
    #[arg(long)]
    pub json: bool,
}

/// Bytes as megabytes for the profile lines (`chat` prints its KV cache the same way).
pub(crate) fn mb(b: usize) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

/// `--prompt-fill` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PromptFillArg {
    /// Run the model over the prompt (prefill).
    Model,
    /// Random keys/values for all but the last prompt position (benchmarks only).
    RandomKv,
}

fn print_profile(s: &GenerationStats) {
    eprintln!();
    eprintln!(
        "prompt tokens      {}{}",
        s.prompt_tokens,
        if s.prompt_fill == PromptFill::RandomKv {
            " (random keys/values in the cache: --prompt-fill random-kv)"
        } else {
            ""
        }
    );
    eprintln!(
        "generated tokens   {} (stop: {:?})",
        s.generated_tokens, s.stop_reason
    );
    eprintln!(
        "prefill            {:.3} s, {:.1} tok/s",
        s.prefill_seconds, s.prefill_tokens_per_second
    );
    eprintln!("time to 1st token  {:.3} s", s.time_to_first_token_seconds);
    eprintln!(
        "decode             {:.3} s, {:.2} tok/s",
        s.decode_seconds, s.decode_tokens_per_second
    );
    eprintln!(
        "decode (2nd half)  {:.2} tok/s (excludes first-step JIT warm-up)",
        s.decode_steady_tokens_per_second
    );
    eprintln!(
        "host per step      {:.3} ms (2nd half; step time {:.3} ms)",
        1e3 * s.decode_host_seconds_per_step_steady,
        1e3 / s.decode_steady_tokens_per_second.max(1e-9)
    );
    if s.decode_submit_thread {
        eprintln!(
            "  submit thread    {:.3} ms in MLX async_eval (overlapping the next step's build); then {:.3} ms waiting for the device",
            1e3 * s.decode_submit_seconds_per_step_steady,
            1e3 * s.decode_wait_seconds_per_step_steady
        );
    } else if s.decode_pipelined {
        eprintln!(
            "  of which submit  {:.3} ms in MLX async_eval; then {:.3} ms waiting for the device",
            1e3 * s.decode_submit_seconds_per_step_steady,
            1e3 * s.decode_wait_seconds_per_step_steady
        );
    }
    eprintln!(
        "step time          p50 {:.3} ms, p90 {:.3} ms (2nd half)",
        1e3 * s.decode_step_seconds_p50_steady,
        1e3 * s.decode_step_seconds_p90_steady
    );
    if let (Some(inside), Some(between)) = (
        s.decode_device_seconds_inside_step_steady,
        s.decode_device_seconds_between_steps_steady,
    ) {
        eprintln!(
            "device clock       {:.3} ms from a step's first node to its last, {:.3} ms idle between steps",
            1e3 * inside,
            1e3 * between
        );
    }
    if let Some(parts) = &s.decode_build_parts_seconds_steady {
        let (inner, outer): (Vec<_>, Vec<_>) =
            parts.iter().partition(|(p, _)| build_profile::is_inner(p));
        let list = |ps: &[&(String, f64)]| {
            ps.iter()
                .map(|(p, t)| {
                    format!(
                        "{} {:.3}",
                        p.trim_start_matches(build_profile::INNER_PREFIX),
                        1e3 * t
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        eprintln!(
            "build parts (ms)   {} (sum {:.3}; per step, 2nd half)",
            list(&outer),
            1e3 * outer.iter().map(|(_, t)| t).sum::<f64>()
        );
        if !inner.is_empty() {
            eprintln!("  inside them (ms) {}", list(&inner));
        }
    }
    if s.decode_kv_appends_seen > 0 {
        eprintln!(
            "kv appends         {} of {} slice_update appends copied the layer's cache (MLX could not write in place)",
            s.decode_kv_appends_copied, s.decode_kv_appends_seen
        );
    }
    if let Some(ab) = &s.decode_step_ab {
        for arm in &ab.arms {
            let ms = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.3}", 1e3 * v));
            eprintln!(
                "step A/B           {}={}: host {:.3} ms per step (submit {:.3}), device {} ms inside, {} ms idle before ({} steps; blocks of {})",
                ab.flag,
                u8::from(arm.on),
                1e3 * arm.host_seconds_per_step,
                1e3 * arm.submit_seconds_per_step,
                ms(arm.device_seconds_inside_step),
                ms(arm.device_seconds_before_step),
                arm.steps,
                ab.block
            );
        }
    }
    if let Some(ops) = s.decode_ops_per_step_steady {
        eprintln!("ops per step       {ops:.1} MLX operations queued (2nd half)");
    }
    if let (Some(t), Some(p), Some(n)) = (
        s.decode_loop_thread_cpu_seconds_per_step_steady,
        s.decode_process_cpu_seconds_per_step_steady,
        s.decode_loop_thread_preemptions_per_step_steady,
    ) {
        eprintln!(
            "host CPU           {:.3} ms per step on the loop's thread, {:.3} ms in the process; {n:.2} preemptions per step (2nd half)",
            1e3 * t,
            1e3 * p
        );
    }
    eprintln!(
        "graph building     {:.3} s on the host ({})",
        s.decode_graph_build_seconds,
        if s.decode_pipelined {
            "pipelined: overlaps the device's previous step"
        } else {
            "synchronous: adds to every step"
        }
    );
    eprintln!("peak memory        {}", mb(s.peak_memory_bytes));
    eprintln!(
        "KV cache           {} ({})",
        mb(s.kv_cache_bytes),
        s.kv_cache_mode
    );
}

/// The text of `path` (`-`: stdin), with an error that names the file.
fn read_prompt_file(path: &std::path::Path) -> Result<String> {
    let bytes = if path.as_os_str() == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .context("--prompt-file -: reading stdin")?;
        b
    } else {
        std::fs::read(path).with_context(|| format!("--prompt-file {}", path.display()))?
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "--prompt-file {}: not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })?;
    if text.trim().is_empty() {
        bail!("--prompt-file {}: the file is empty", path.display());
    }
    Ok(text)
}

pub fn run(args: &GenerateArgs) -> Result<()> {
    crate::host_profile::check()?;
    // Before the model loads: MLX reads its graph limits when the GPU is first used.
    let graph_limit = graph_limits::lift_for_compressed_kv(args.kv.config()?.mode != KvMode::FP16);
    // The prompt file first: a missing file fails before seconds of model loading.
    if args.prompt_tokens.is_some() && (args.prompt.is_some() || args.prompt_file.is_some()) {
        bail!("--prompt-tokens replaces the prompt: give it without --prompt / --prompt-file");
    }
    let prompt_text = match &args.prompt_file {
        Some(path) => {
            let doc = read_prompt_file(path)?;
            Some(match &args.prompt {
                Some(p) => format!("{doc}\n\n{p}"),
                None => doc,
            })
        }
        None => args.prompt.clone(),
    };
    let model = Model::load(args.model.model.as_deref(), &args.model.load_options())?;
    let kv = args.kv.config_for(model.config().head_dim)?;
    let prompt_ids: Vec<u32> = match (&prompt_text, args.prompt_tokens) {
        (_, Some(n)) => {
            if n == 0 {
                bail!("--prompt-tokens must be at least 1");
            }
            let mut rng = rand::rngs::StdRng::seed_from_u64(args.sampling.seed);
            let vocab = model.config().vocab_size as u32;
            (0..n).map(|_| rng.gen_range(0..vocab)).collect()
        }
        (Some(_), None) if args.prompt_fill == PromptFillArg::RandomKv => {
            bail!("--prompt-fill random-kv replaces the prompt with random keys and values: use it with --prompt-tokens, not --prompt / --prompt-file")
        }
        (Some(p), None) => {
            let tok = model
                .tokenizer()
                .context("this model cannot take a text prompt; use --prompt-tokens")?;
            let text = if args.no_chat_template {
                p.clone()
            } else if tok.chat_template.is_none() {
                tracing::warn!("the model has no chat template; sending the raw prompt");
                p.clone()
            } else {
                let mut msgs = Vec::new();
                if let Some(s) = &args.system {
                    msgs.push(Message::new("system", s));
                }
                msgs.push(Message::new("user", p));
                apply_chat_template_with(
                    tok,
                    &msgs,
                    &args.chat_template_kwargs.clone().unwrap_or_default(),
                )?
            };
            tok.encode(&text)?
        }
        (None, None) => bail!(
            "give --prompt TEXT or --prompt-file PATH (or --prompt-tokens N for random token ids)"
        ),
    };
    let params = GenerateParams {
        max_tokens: args.max_tokens,
        stop: args.stop.clone(),
        prefill_chunk: args.prefill_chunk,
        ignore_eos: args.ignore_eos,
        sampling: args.sampling.params(),
        kv,
        pipelined: None,
        submit_thread: None,
        build_profile: None,
        prompt_fill: match args.prompt_fill {
            PromptFillArg::Model => PromptFill::Model,
            PromptFillArg::RandomKv => PromptFill::RandomKv,
        },
        step_ab: None,
        on_steady_decode: crate::host_profile::requested()
            .then_some(crate::host_profile::start_now),
        on_prefill: Some(crate::progress::prefill_bar("prefill")),
        cancel: None,
    };
    let stream = !args.json;
    let mut stdout = std::io::stdout();
    let out = generate(&model, &prompt_ids, &params, |piece| {
        if stream {
            let _ = stdout.write_all(piece.as_bytes());
            let _ = stdout.flush();
        }
    })?;
    // MLXCEL_HOST_PROFILE: the sampler started with steady decoding (`on_steady_decode`) and
    // stops here; a failure to write it is reported after the generation's own output.
    let host_profile = crate::host_profile::finish();
    if args.json {
        let v = serde_json::json!({
            "model": model.description,
            "prompt_tokens": prompt_ids,
            "text": out.text,
            "tokens": out.tokens,
            "stats": out.stats,
            "mlx_graph_limit": graph_limit.describe(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!();
    }
    if args.profile {
        print_profile(&out.stats);
        eprintln!("MLX graph limit    {}", graph_limit.describe());
        let k = mlxcel_core::mlx::kernel_cache::stats();
        if k.compiled > 0 {
            eprintln!(
                "kernel compiles    {} mlxcel kernels compiled for this GPU ({:.1} s of compiling, up to 8 at once; {:.1} s waited), kept in {} for later runs",
                k.compiled,
                k.compile_seconds,
                k.waited_seconds,
                mlxcel_core::mlx::kernel_cache::ptx_cache_dir().display()
            );
        }
    }
    if let Some(samples) = host_profile? {
        eprintln!(
            "host profile       {samples} samples of steady decoding into {}",
            std::env::var(crate::host_profile::ENV).unwrap_or_default()
        );
    }
    Ok(())
}
