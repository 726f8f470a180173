//! A multi-turn conversation over one KV cache.
//!
//! Each turn renders the whole conversation with the model's chat template, as a fresh
//! `generate` of that transcript would see it, and runs through the model only the tokens the
//! cache does not hold yet ([`generate_in`]). Why render the whole transcript rather than
//! append the new turn's text: templates may rewrite earlier turns (Qwen3 drops old
//! reasoning), and re-tokenizing a reply need not give the tokens that were generated. The
//! cache keeps the longest prefix on which both agree and is cut back there
//! (`KvCache::truncate`), so a turn costs its new tokens, and its result is that of a fresh
//! run over the same transcript.

use crate::error::{ModelError, Result};
use crate::generate::{generate_in, GenerateParams, Generation, KvContext};
use crate::model::{KvConfig, Model};
use crate::tokenizer::chat::{apply_chat_template_with, Message};
use crate::tokenizer::Tokenizer;

/// A conversation: its messages and the KV cache of its transcript.
pub struct ChatSession<'m> {
    model: &'m Model,
    ctx: KvContext,
    system: Option<String>,
    messages: Vec<Message>,
    template_vars: serde_json::Map<String, serde_json::Value>,
}

impl<'m> ChatSession<'m> {
    /// An empty conversation with `model` (which needs a tokenizer and a chat template),
    /// caching in `kv`'s mode, opened by `system` if given.
    pub fn new(model: &'m Model, kv: &KvConfig, system: Option<&str>) -> Result<ChatSession<'m>> {
        let tok = chat_tokenizer(model)?;
        if tok.chat_template.is_none() {
            return Err(ModelError::Template(format!(
                "{} has no chat template, which a conversation needs (`generate \
                 --no-chat-template` sends raw text)",
                model.description
            )));
        }
        let mut s = ChatSession {
            model,
            ctx: KvContext::new(model, kv)?,
            system: system.map(str::to_owned),
            messages: Vec::new(),
            template_vars: serde_json::Map::new(),
        };
        s.open();
        Ok(s)
    }

    /// Extra chat-template variables for every turn (e.g. `enable_thinking: false` for
    /// Qwen3; `tokenizer::chat::apply_chat_template_with`).
    pub fn with_template_vars(
        mut self,
        vars: serde_json::Map<String, serde_json::Value>,
    ) -> ChatSession<'m> {
        self.template_vars = vars;
        self
    }

    fn open(&mut self) {
        self.messages.clear();
        if let Some(sys) = &self.system {
            self.messages.push(Message::new("system", sys));
        }
    }

    /// The token ids of the transcript with `messages`, ending in the assistant's turn.
    fn transcript(&self, messages: &[Message]) -> Result<Vec<u32>> {
        let tok = chat_tokenizer(self.model)?;
        tok.encode(&apply_chat_template_with(
            tok,
            messages,
            &self.template_vars,
        )?)
    }

    /// Sends `user`'s message and generates the reply (streamed through `on_text`), which
    /// joins the conversation. On an error the conversation is as it was before the call
    /// (its cache may have been started over).
    pub fn send(
        &mut self,
        user: &str,
        params: &GenerateParams,
        on_text: impl FnMut(&str),
    ) -> Result<Generation> {
        let mut messages = self.messages.clone();
        messages.push(Message::new("user", user));
        let ids = self.transcript(&messages)?;
        // On an error generate_in empties the cache and the messages stay as they were.
        let out = generate_in(self.model, &mut self.ctx, &ids, params, on_text)?;
        messages.push(Message::new("assistant", &out.text));
        self.messages = messages;
        Ok(out)
    }

    /// Forgets every turn (the system message stays) and empties the cache.
    pub fn reset(&mut self) -> Result<()> {
        self.open();
        self.ctx.clear(self.model)
    }

    /// The messages so far (the system message first, if any).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Tokens whose keys and values the cache holds.
    pub fn cached_tokens(&self) -> &[u32] {
        self.ctx.tokens()
    }

    /// Bytes the KV cache holds (as stored).
    pub fn cache_bytes(&self) -> usize {
        self.ctx.cache_bytes()
    }
}

fn chat_tokenizer(model: &Model) -> Result<&Tokenizer> {
    model.tokenizer.as_ref().ok_or_else(|| {
        ModelError::Unsupported(format!(
            "{} has no tokenizer ({}): a conversation needs text",
            model.description,
            if model.synthetic {
                "synthetic weights"
            } else {
                "none came with its weights"
            }
        ))
    })
}
