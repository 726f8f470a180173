//! `mlxcel chat`: a conversation on the terminal or over piped lines, one KV cache for all of
//! its turns (`mlxcel_models::chat::ChatSession`: each turn runs only the tokens the cache
//! does not hold yet).

use std::io::{BufRead, IsTerminal, Write};

use anyhow::{bail, Context, Result};
use clap::Args;
use mlxcel_core::kv::KvMode;
use mlxcel_core::mlx::graph_limits;
use mlxcel_models::chat::ChatSession;
use mlxcel_models::generate::{GenerateParams, GenerationStats};
use mlxcel_models::Model;

use crate::generate::mb;
use crate::kv_args::KvArgs;
use crate::model_args::ModelArgs;
use crate::sampling_args::SamplingArgs;

/// Lines that are commands rather than messages.
const HELP: &str = "\"\"\" opens and closes a message of several lines; /reset forgets the \
                    conversation, /stats shows the context and the KV cache, /help shows this, \
                    /quit (or end of input) leaves";

#[derive(Args, Debug)]
#[command(
    after_help = "Each line read from stdin is one message, or the lines between two \"\"\" \
    marks (pasted text, a document); the reply streams to stdout (prompts and notes go to \
    stderr, so `mlxcel chat < questions.txt > answers.txt` works). Commands: /reset, /stats, \
    /help, /quit.\n\nEvery turn renders the whole conversation with the \
    model's chat template and runs only the tokens the KV cache does not hold yet, so a long \
    conversation does not pay its history again; replies are those of a fresh `generate` over \
    the same transcript. The cache is in --kv's mode for the whole conversation."
)]
pub struct ChatArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub kv: KvArgs,
    /// System message that opens the conversation (kept by /reset).
    #[arg(long)]
    pub system: Option<String>,
    /// Extra chat-template variables as a JSON object, e.g. '{"enable_thinking": false}'
    /// (Qwen3: no reasoning block).
    #[arg(long, value_name = "JSON", value_parser = crate::template_vars::parse)]
    pub chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
    /// Most new tokens per reply.
    #[arg(long, default_value_t = 512)]
    pub max_tokens: usize,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// End a reply when this text appears (repeatable); the text before it joins the
    /// conversation.
    #[arg(long)]
    pub stop: Vec<String>,
    /// Prompt tokens per prefill step (bounds memory on long messages).
    #[arg(long, default_value_t = 512)]
    pub prefill_chunk: usize,
    /// After each reply, print to stderr the prompt tokens reused from the cache and run,
    /// the prefill and decode speeds, the context's length and the KV cache's size.
    #[arg(long)]
    pub profile: bool,
}

/// Opens and closes a message of several lines (pasted text, a piped document).
const BLOCK: &str = "\"\"\"";

/// The next message from `lines`: one line, or the lines between a line opening with `"""`
/// and one closing with it (joined by newlines, the marks removed). `None` at the end of the
/// input; an error where it ends inside a block.
fn next_message(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    interactive: bool,
) -> Result<Option<String>> {
    let mut read = || -> Result<Option<String>> {
        match lines.next() {
            None => Ok(None),
            Some(l) => Ok(Some(
                l.context("reading stdin")?
                    .trim_end_matches('\r')
                    .to_string(),
            )),
        }
    };
    let Some(first) = read()? else {
        return Ok(None);
    };
    let Some(opened) = first.trim_start().strip_prefix(BLOCK) else {
        return Ok(Some(first));
    };
    if let Some(inner) = opened.trim_end().strip_suffix(BLOCK) {
        return Ok(Some(inner.to_string()));
    }
    // The marks' own lines add no empty first or last line.
    let mut parts: Vec<String> = Vec::new();
    if !opened.trim().is_empty() {
        parts.push(opened.to_string());
    }
    loop {
        if interactive {
            eprint!(". ");
            let _ = std::io::stderr().flush();
        }
        let Some(line) = read()? else {
            bail!("the input ended inside a {BLOCK} block");
        };
        match line.trim_end().strip_suffix(BLOCK) {
            Some(last) => {
                if !last.trim().is_empty() {
                    parts.push(last.to_string());
                }
                return Ok(Some(parts.join("\n")));
            }
            None => parts.push(line),
        }
    }
}

fn turn_summary(s: &GenerationStats, context: usize, cache_bytes: usize, mode: &str) -> String {
    format!(
        "[prompt {} tokens: {} reused from the cache, {} run in {:.3} s; reply {} tokens at \
         {:.1} tok/s (stop: {:?}); context {context} tokens, KV cache {} ({mode})]",
        s.prompt_tokens,
        s.prompt_tokens_reused,
        s.prompt_tokens - s.prompt_tokens_reused,
        s.prefill_seconds,
        s.generated_tokens,
        s.decode_tokens_per_second,
        s.stop_reason,
        mb(cache_bytes)
    )
}

pub fn run(args: &ChatArgs) -> Result<()> {
    // Before the model loads: MLX reads its graph limits when the GPU is first used.
    graph_limits::lift_for_compressed_kv(args.kv.config()?.mode != KvMode::FP16);
    if args.max_tokens == 0 {
        bail!("--max-tokens must be at least 1");
    }
    let model = Model::load(args.model.model.as_deref(), &args.model.load_options())?;
    let kv = args.kv.config_for(model.config().head_dim)?;
    let mut session = ChatSession::new(&model, &kv, args.system.as_deref())?
        .with_template_vars(args.chat_template_kwargs.clone().unwrap_or_default());
    let params = GenerateParams {
        max_tokens: args.max_tokens,
        stop: args.stop.clone(),
        prefill_chunk: args.prefill_chunk,
        sampling: args.sampling.params(),
        kv,
        on_prefill: Some(crate::progress::prefill_bar("prefill")),
        ..Default::default()
    };
    let mode = kv.mode.name();
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!(
            "mlxcel chat: {} (KV cache {mode}, context up to {} tokens). {HELP}.",
            model.description,
            model.config().max_position_embeddings
        );
    }
    let mut stdout = std::io::stdout();
    let mut lines = std::io::stdin().lock().lines();
    loop {
        if interactive {
            eprint!("> ");
            let _ = std::io::stderr().flush();
        }
        let Some(message) = next_message(&mut lines, interactive)? else {
            break;
        };
        let message = message.as_str();
        match message.trim() {
            "" => continue,
            "/quit" | "/exit" => break,
            "/help" => {
                eprintln!("{HELP}");
                continue;
            }
            "/reset" => {
                session.reset()?;
                eprintln!("[conversation reset]");
                continue;
            }
            "/stats" => {
                eprintln!(
                    "[{} messages; {} tokens cached, KV cache {} ({mode})]",
                    session.messages().len(),
                    session.cached_tokens().len(),
                    mb(session.cache_bytes())
                );
                continue;
            }
            _ => {}
        }
        let reply = session.send(message, &params, |piece| {
            let _ = stdout.write_all(piece.as_bytes());
            let _ = stdout.flush();
        });
        println!();
        let out = match reply {
            Ok(out) => out,
            // On a terminal the conversation goes on (as it was before the message); piped
            // input stops at the first failed turn so that scripts see the failure.
            Err(e) if interactive => {
                eprintln!("error: {e:#}");
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let context = session.cached_tokens().len();
        if args.profile {
            eprintln!(
                "{}",
                turn_summary(&out.stats, context, session.cache_bytes(), &mode)
            );
        }
        if context + args.max_tokens > model.config().max_position_embeddings {
            tracing::warn!(
                "the conversation holds {context} tokens; the model was trained for {}",
                model.config().max_position_embeddings
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::next_message;

    fn messages(input: &str) -> anyhow::Result<Vec<String>> {
        let mut lines = input.lines().map(|l| Ok(l.to_string()));
        let mut out = Vec::new();
        while let Some(m) = next_message(&mut lines, false)? {
            out.push(m);
        }
        Ok(out)
    }

    #[test]
    fn lines_and_blocks_split_into_messages() {
        let input = "one\r\n\"\"\"\nfirst line\n  second\n\"\"\"\n\"\"\"inline\"\"\"\n\"\"\"opened\nclosed\"\"\"\ntwo";
        assert_eq!(
            messages(input).unwrap(),
            [
                "one",
                "first line\n  second",
                "inline",
                "opened\nclosed",
                "two"
            ]
        );
        let err = messages("\"\"\"\nnever closed").unwrap_err().to_string();
        assert!(err.contains("ended inside"), "{err}");
    }
}
