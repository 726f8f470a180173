//! `--chat-template-kwargs`: extra chat-template variables from the command line.

/// Clap's parser for a JSON object of template variables (`'{"enable_thinking": false}'`).
pub fn parse(s: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str::<serde_json::Value>(s) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(other) => Err(format!(
            "expected a JSON object such as '{{\"enable_thinking\": false}}', got {other}"
        )),
        Err(e) => Err(format!(
            "not JSON ({e}); expected e.g. '{{\"enable_thinking\": false}}'"
        )),
    }
}
