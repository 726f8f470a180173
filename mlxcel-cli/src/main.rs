//! `mlxcel`: the command-line entry point.

mod allocator;
mod bench;
mod bench_gemv;
mod chat;
mod generate;
mod host_profile;
mod info;
mod kv_args;
mod model_args;
mod niah;
mod perplexity;
mod progress;
mod recommend;
mod sampling_args;
mod serve;
mod template_vars;

use clap::{Parser, Subcommand};

/// mlxcel: LLM inference on MLX with a compressed KV cache.
#[derive(Parser)]
#[command(name = "mlxcel", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the MLX library, backend, devices, GPU memory and (optionally) check that
    /// custom GPU kernels compile and run.
    Info(info::InfoArgs),
    /// Generate text from a prompt (streams to stdout).
    Generate(generate::GenerateArgs),
    /// A conversation over stdin (one message per line), replies streamed to stdout; one KV
    /// cache serves every turn, so each turn runs only its new tokens.
    Chat(chat::ChatArgs),
    /// An OpenAI-compatible HTTP server (chat and text completions, streaming) over one
    /// model; its KV cache (or --kv-slots caches) is reused by each request as far as the
    /// prompt matches what it holds.
    Serve(serve::ServeArgs),
    /// Perplexity over non-overlapping windows of a text; with --kv, KLD of each KV mode
    /// against the fp16 cache on the same windows.
    Perplexity(perplexity::PerplexityArgs),
    /// Needle-in-a-haystack retrieval at several context lengths and depths, per KV mode.
    Niah(niah::NiahArgs),
    /// Microbenchmarks (decode attention per KV mode vs MLX fp16 SDPA and a copy roofline).
    Bench(bench::BenchArgs),
    /// Which KV mode to use for a model at a context in the memory there is: every mode's
    /// cache size, whether it fits, the longest context it allows, and a pick with the
    /// reason (also `mlxcel --recommend-quant ...`). Reads only the config and file sizes.
    RecommendQuant(recommend::RecommendArgs),
}

/// On CUDA, with `MLX_PTX_CACHE_DIR` unset, points MLX's compiled-kernel cache (MLX's own
/// kernels and the images mlxcel writes there, ADR 0029) at a folder in mlxcel's cache instead
/// of the temporary folder, which a reboot may empty (then the next run compiles everything
/// again: ~50 s on an H100); one folder per MLX version and GPU architecture. Runs before
/// anything compiles (MLX reads the variable once) and before other threads exist. A folder
/// that cannot be made leaves MLX's default.
fn keep_compiled_kernels() {
    use mlxcel_core::mlx::kernel::KernelBackend;
    if std::env::var_os("MLX_PTX_CACHE_DIR").is_some()
        || KernelBackend::current() != Some(KernelBackend::Cuda)
    {
        return;
    }
    use mlxcel_core::mlx::device;
    // MLX reports the GPU's architecture ("sm_90"); without it, MLX's default stays.
    let Some(arch) = device::gpu_architecture()
        .filter(|v| v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    else {
        return;
    };
    let dir = mlxcel_core::mlx::kernel_cache::lasting_dir(
        &mlxcel_models::loader::resolve::cache_dir(),
        &device::mlx_version(),
        &arch,
    );
    match std::fs::create_dir_all(&dir) {
        Ok(()) => std::env::set_var("MLX_PTX_CACHE_DIR", &dir),
        Err(e) => tracing::debug!(
            "compiled kernels stay in MLX's temporary folder: cannot create {}: {e}",
            dir.display()
        ),
    }
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MLXCEL_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("warn,mlxcel_models=info,mlxcel=info")
            }),
        )
        .without_time()
        .with_target(false)
        // Colour codes only on a terminal: logs redirected to a file stay greppable.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    // A mistyped or retired `MLXCEL_*` switch would otherwise leave an A/B measuring the
    // default on both sides without a word.
    for line in mlxcel_core::flags::unread_env_vars()
        .into_iter()
        .chain(mlxcel_core::flags::unclear_env_flag_values())
    {
        tracing::warn!("{line}");
    }
    keep_compiled_kernels();
    // `mlxcel --recommend-quant ...` is the same as `mlxcel recommend-quant ...`.
    let cli = Cli::parse_from(std::env::args_os().enumerate().map(|(i, a)| {
        if i == 1 && a == "--recommend-quant" {
            "recommend-quant".into()
        } else {
            a
        }
    }));
    let result = match cli.command {
        Command::Info(args) => info::run(&args),
        Command::Generate(args) => generate::run(&args),
        Command::Chat(args) => chat::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Perplexity(args) => perplexity::run(&args),
        Command::Niah(args) => niah::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::RecommendQuant(args) => recommend::run(&args),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
