//! Needle in a haystack: a sentence holding a random passphrase is hidden at a chosen
//! depth of a long public-domain text, and the model is asked for it. One trial per
//! (context length, depth); a hit is an answer that contains the passphrase.

use rand::{Rng, SeedableRng};

use crate::error::{ModelError, Result};
use crate::generate::{generate, GenerateParams};
use crate::model::{KvConfig, Model};
use crate::tokenizer::chat::{apply_chat_template, Message};

/// One trial's outcome.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NeedleTrial {
    pub kv_mode: String,
    pub context_tokens: usize,
    pub depth: f64,
    pub passphrase: String,
    pub answer: String,
    pub hit: bool,
}

/// Settings of a run.
#[derive(Debug, Clone)]
pub struct NeedleParams {
    /// Prompt lengths in tokens (haystack + needle + question).
    pub contexts: Vec<usize>,
    /// Needle positions as fractions of the haystack (0 = start, 1 = end).
    pub depths: Vec<f64>,
    pub seed: u64,
    pub max_answer_tokens: usize,
}

const QUESTION: &str =
    "What is the secret passphrase mentioned in the text above? Reply with the passphrase only.";
/// The answer is primed with this text, so that retrieval (copying the number) is what is
/// measured rather than the model's willingness to follow the instruction.
const ANSWER_PREFIX: &str = "The secret passphrase is";

fn needle(pass: &str) -> String {
    format!(" The secret passphrase is {pass}. Remember it: the secret passphrase is {pass}. ")
}

/// Builds the prompt ids for one trial.
fn prompt(model: &Model, haystack: &[u32], ctx: usize, depth: f64, pass: &str) -> Result<Vec<u32>> {
    let tok = model.tokenizer()?;
    let wrap = |body: &str| -> Result<Vec<u32>> {
        let user = format!("{body}\n\n{QUESTION}");
        match tok.chat_template {
            Some(_) => tok.encode(&format!(
                "{}{ANSWER_PREFIX}",
                apply_chat_template(tok, &[Message::new("user", &user)])?
            )),
            None => tok.encode(&format!("{user}\n{ANSWER_PREFIX}")),
        }
    };
    let overhead = wrap(&needle(pass))?.len();
    if ctx <= overhead + 16 {
        return Err(ModelError::Unsupported(format!(
            "context {ctx} is too short for the needle and question"
        )));
    }
    let n = ctx - overhead;
    if haystack.len() < n {
        return Err(ModelError::Unsupported(format!(
            "the haystack has {} tokens, fewer than the {n} a {ctx}-token trial needs",
            haystack.len()
        )));
    }
    let cut = ((n as f64) * depth.clamp(0.0, 1.0)).round() as usize;
    let before = tok.decode(&haystack[..cut], true)?;
    let after = tok.decode(&haystack[cut..n], true)?;
    wrap(&format!("{before}{}{after}", needle(pass)))
}

/// Runs every (context, depth) trial for each KV mode in `modes` with greedy decoding.
pub fn run(
    model: &Model,
    haystack_text: &str,
    params: &NeedleParams,
    modes: &[KvConfig],
) -> Result<Vec<NeedleTrial>> {
    let tok = model.tokenizer()?;
    let haystack = tok.encode(haystack_text)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(params.seed);
    let mut out = Vec::new();
    for &ctx in &params.contexts {
        for &depth in &params.depths {
            let pass = format!("{}", rng.gen_range(1000..10000));
            let ids = prompt(model, &haystack, ctx, depth, &pass)?;
            for kv in modes {
                let g = generate(
                    model,
                    &ids,
                    &GenerateParams {
                        max_tokens: params.max_answer_tokens,
                        kv: *kv,
                        ..Default::default()
                    },
                    |_| {},
                )?;
                let hit = g.text.contains(&pass);
                tracing::info!(
                    "niah {} ctx {ctx} depth {depth:.2}: {} ({:?})",
                    kv.mode.name(),
                    if hit { "hit" } else { "miss" },
                    g.text.trim()
                );
                out.push(NeedleTrial {
                    kv_mode: kv.mode.name(),
                    context_tokens: ids.len(),
                    depth,
                    passphrase: pass.clone(),
                    answer: g.text.trim().to_string(),
                    hit,
                });
            }
        }
    }
    Ok(out)
}
