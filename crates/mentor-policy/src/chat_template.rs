//! Chat templates: the model's own Jinja template, rendered with `minijinja`.
//!
//! The template text comes from `tokenizer_config.json` (`chat_template`) or GGUF metadata
//! (`tokenizer.chat_template`). Rendering follows transformers' `apply_chat_template`:
//! `trim_blocks` and `lstrip_blocks` on, `messages`, `add_generation_prompt`, `bos_token` and
//! `eos_token` in the context, `raise_exception(msg)` available, Python string methods
//! (`.strip()`, `.startswith()`, ...) through minijinja-contrib's pycompat. Nothing here
//! hand-writes a model's format.

use mentor_core::Message;

use crate::error::{Error, Result};
use crate::tokenizer::SpecialTokens;

/// A compiled-on-construction chat template.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    source: String,
    special: SpecialTokens,
}

fn environment() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function("raise_exception", |msg: String| -> std::result::Result<String, minijinja::Error> {
        Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, msg))
    });
    env
}

impl ChatTemplate {
    /// Parses `source`; fails on a syntax error.
    pub fn new(source: impl Into<String>, special: SpecialTokens) -> Result<Self> {
        let source = source.into();
        environment().template_from_str(&source).map_err(|e| Error::ChatTemplate(e.to_string()))?;
        Ok(Self { source, special })
    }

    /// The template text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders `messages`; with `add_generation_prompt` the text ends where the assistant's
    /// answer begins.
    pub fn render(&self, messages: &[Message], add_generation_prompt: bool) -> Result<String> {
        let ctx = minijinja::context! {
            messages => messages,
            add_generation_prompt => add_generation_prompt,
            bos_token => self.special.bos.as_deref().unwrap_or(""),
            eos_token => self.special.eos.as_deref().unwrap_or(""),
        };
        environment().render_str(&self.source, ctx).map_err(|e| Error::ChatTemplate(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SmolLM2-Instruct's template, verbatim from its `tokenizer_config.json`.
    const SMOLLM2: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    #[test]
    fn renders_smollm2_like_transformers() {
        let t = ChatTemplate::new(SMOLLM2, SpecialTokens::default()).unwrap();
        let out = t.render(&[Message::user("What is the capital of France?")], true).unwrap();
        // The `chat_text` transformers produced in ../shared/fixtures/smollm2_greedy.json.
        assert_eq!(
            out,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
        );
        let out = t.render(&[Message::system("S"), Message::user("U")], false).unwrap();
        assert_eq!(out, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n");
    }

    #[test]
    fn python_methods_exceptions_and_special_tokens() {
        let src = "{{ bos_token }}{% for m in messages %}{% if m.role not in ['user', 'assistant'] %}{{ raise_exception('bad role ' + m.role) }}{% endif %}\n  {% if true %}{{ m.content.strip() }}{% endif %}{{ eos_token }}{% endfor %}";
        let special = SpecialTokens { bos: Some("<s>".into()), eos: Some("</s>".into()), pad: None };
        let t = ChatTemplate::new(src, special).unwrap();
        // lstrip_blocks + trim_blocks drop the newline after `endif` and the indentation.
        assert_eq!(t.render(&[Message::user("  hi ")], false).unwrap(), "<s>hi</s>");
        let err = t.render(&[Message::system("x")], false).unwrap_err();
        assert!(err.to_string().contains("bad role system"), "{err}");
        assert!(ChatTemplate::new("{% for %}", SpecialTokens::default()).is_err());
    }
}
