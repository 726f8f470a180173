//! Chat templates: the model's own Jinja template rendered with minijinja (plus the
//! Python-style string methods HF templates use).

use minijinja::{context, Environment, Error as JinjaError, ErrorKind};
use serde::Serialize;

use super::Tokenizer;
use crate::error::{ModelError, Result};

/// One chat message.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn new(role: &str, content: &str) -> Message {
        Message {
            role: role.into(),
            content: content.into(),
        }
    }
}

fn raise_exception(msg: String) -> std::result::Result<String, JinjaError> {
    Err(JinjaError::new(ErrorKind::InvalidOperation, msg))
}

/// Renders `messages` with the tokenizer's chat template and the generation prompt.
pub fn apply_chat_template(tok: &Tokenizer, messages: &[Message]) -> Result<String> {
    apply_chat_template_with(tok, messages, &serde_json::Map::new())
}

/// Names the renderer sets itself; extra variables may not replace them.
pub const RESERVED_TEMPLATE_VARIABLES: [&str; 4] = [
    "messages",
    "add_generation_prompt",
    "bos_token",
    "eos_token",
];

/// The first of `extra`'s names that the renderer sets itself
/// ([`RESERVED_TEMPLATE_VARIABLES`]), if any.
pub fn reserved_variable(extra: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    extra
        .keys()
        .map(String::as_str)
        .find(|k| RESERVED_TEMPLATE_VARIABLES.contains(k))
}

/// [`apply_chat_template`] with extra template variables, as HF's `apply_chat_template(...,
/// **kwargs)` takes them: e.g. `enable_thinking: false` for Qwen3's template, which then
/// opens the reply with an empty reasoning block. Variables the template does not use change
/// nothing. The renderer's own names (`messages`, `add_generation_prompt`, `bos_token`,
/// `eos_token`) are refused rather than silently overridden.
pub fn apply_chat_template_with(
    tok: &Tokenizer,
    messages: &[Message],
    extra: &serde_json::Map<String, serde_json::Value>,
) -> Result<String> {
    if let Some(name) = reserved_variable(extra) {
        return Err(ModelError::Template(format!(
            "the template variable `{name}` is set by mlxcel and cannot be passed"
        )));
    }
    let template = tok.chat_template.as_deref().ok_or_else(|| {
        ModelError::Template(
            "this model has no chat template; pass --no-chat-template to send the raw prompt"
                .into(),
        )
    })?;
    let mut env = Environment::new();
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function("raise_exception", raise_exception);
    env.add_template("chat", template)
        .map_err(|e| ModelError::Template(format!("cannot parse the model's template: {e}")))?;
    let t = env.get_template("chat").expect("just added");
    t.render(context! {
        messages => messages,
        add_generation_prompt => true,
        bos_token => tok.bos_token.as_ref().map(|(_, s)| s.clone()).unwrap_or_default(),
        eos_token => tok.eos_token.clone().unwrap_or_default(),
        ..minijinja::Value::from_serialize(extra)
    })
    .map_err(|e| ModelError::Template(format!("rendering failed: {e}")))
}
