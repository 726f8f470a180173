//! Tokenization: an HF `tokenizers` tokenizer read from `tokenizer.json`, or rebuilt from
//! GGUF metadata (byte-level BPE), plus the model's chat template and special tokens.

pub mod chat;
pub mod gguf_bpe;

use std::path::Path;

use crate::error::{ModelError, Result};

/// A model's tokenizer and the special tokens generation needs.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    /// Prepended to prompts when the model expects it.
    pub bos_token: Option<(u32, String)>,
    pub add_bos: bool,
    pub eos_ids: Vec<u32>,
    pub eos_token: Option<String>,
    pub chat_template: Option<String>,
}

impl Tokenizer {
    /// Loads `tokenizer.json` (and `tokenizer_config.json` for the chat template and
    /// special tokens, when present) from a model directory.
    pub fn from_dir(dir: &Path, eos_from_config: &[u32]) -> Result<Tokenizer> {
        let path = dir.join("tokenizer.json");
        let inner = tokenizers::Tokenizer::from_file(&path)
            .map_err(|e| ModelError::Tokenizer(format!("{}: {e}", path.display())))?;
        let cfg_path = dir.join("tokenizer_config.json");
        let cfg: serde_json::Value = match std::fs::read_to_string(&cfg_path) {
            Ok(t) => serde_json::from_str(&t).map_err(|e| ModelError::BadFile {
                path: cfg_path.clone(),
                message: format!("not valid JSON: {e}"),
            })?,
            Err(_) => serde_json::Value::Null,
        };
        let token_str = |key: &str| -> Option<String> {
            match cfg.get(key)? {
                serde_json::Value::String(s) => Some(s.clone()),
                v => v.get("content")?.as_str().map(str::to_string),
            }
        };
        let bos_token =
            token_str("bos_token").and_then(|s| inner.token_to_id(&s).map(|id| (id, s)));
        let eos_token = token_str("eos_token");
        let mut eos_ids: Vec<u32> = eos_from_config.to_vec();
        if let Some(id) = eos_token.as_ref().and_then(|s| inner.token_to_id(s)) {
            if !eos_ids.contains(&id) {
                eos_ids.push(id);
            }
        }
        let chat_template = match cfg.get("chat_template") {
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            _ => std::fs::read_to_string(dir.join("chat_template.jinja")).ok(),
        };
        Ok(Tokenizer {
            inner,
            add_bos: cfg
                .get("add_bos_token")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
            bos_token,
            eos_ids,
            eos_token,
            chat_template,
        })
    }

    /// Wraps an already-built tokenizer.
    pub fn from_parts(inner: tokenizers::Tokenizer) -> Tokenizer {
        Tokenizer {
            inner,
            bos_token: None,
            add_bos: false,
            eos_ids: Vec::new(),
            eos_token: None,
            chat_template: None,
        }
    }

    /// Token ids of `text`; special-token strings in it are recognized, and the BOS id is
    /// prepended when the model asks for it and the text does not start with it.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        let mut ids = enc.get_ids().to_vec();
        if self.add_bos {
            if let Some((bos, _)) = &self.bos_token {
                if ids.first() != Some(bos) {
                    ids.insert(0, *bos);
                }
            }
        }
        Ok(ids)
    }

    /// Text of `ids`, optionally dropping special tokens.
    pub fn decode(&self, ids: &[u32], skip_special: bool) -> Result<String> {
        self.inner
            .decode(ids, skip_special)
            .map_err(|e| ModelError::Tokenizer(e.to_string()))
    }

    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    pub fn token_to_id(&self, s: &str) -> Option<u32> {
        self.inner.token_to_id(s)
    }

    pub fn is_eos(&self, id: u32) -> bool {
        self.eos_ids.contains(&id)
    }
}

/// Turns a growing token sequence into text pieces as they become complete: a byte-level
/// BPE token can end inside a UTF-8 character, so text is emitted only up to the last
/// complete character. Only the tokens since the last emitted piece are re-decoded (each
/// step decodes a short window, not the whole answer), diffed against the same window
/// without the new tokens so that decoder effects at the window's start cancel.
pub struct StreamDecoder {
    ids: Vec<u32>,
    /// Start of the window that is re-decoded.
    prefix: usize,
    /// End of the part of the window already emitted.
    read: usize,
}

impl Default for StreamDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamDecoder {
    pub fn new() -> StreamDecoder {
        StreamDecoder {
            ids: Vec::new(),
            prefix: 0,
            read: 0,
        }
    }

    /// Adds a token; returns the newly completed text (possibly empty).
    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> Result<String> {
        self.ids.push(id);
        let done = tok.decode(&self.ids[self.prefix..self.read], true)?;
        let text = tok.decode(&self.ids[self.prefix..], true)?;
        if text.ends_with('\u{FFFD}')
            || text.len() <= done.len()
            || !text.is_char_boundary(done.len())
        {
            return Ok(String::new());
        }
        let new = text[done.len()..].to_string();
        self.prefix = self.read;
        self.read = self.ids.len();
        Ok(new)
    }
}
