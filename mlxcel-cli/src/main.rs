//! `mlxcel`: the command-line entry point.

mod info;

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
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MLXCEL_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info(args) => info::run(&args),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
