//! Where the hint goes in the learner's prompt.

use std::fmt;

use mentor_core::{Hint, Message, Role, Task};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A template for the hinted prompt's last user message: `{prompt}` is the original message
/// (required, once), `{hint}` the hint's text (optional). The default,
/// `"{prompt}\n\nHint: {hint}"`, suits instruction-tuned models; a tiny model trained from
/// scratch is better served by a short marker (`"{prompt}H"`), which keeps the hinted and
/// the plain prompt nearly aligned position by position — what lets `prefix` credit carry a
/// hinted skill over to the plain prompt.
#[derive(Clone, PartialEq, Eq)]
pub struct HintFormat {
    before: String,
    after: String,
}

/// A template that does not contain `{prompt}` exactly once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hint template `{0}` must contain `{{prompt}}` exactly once")]
pub struct BadHintFormat(pub String);

impl HintFormat {
    /// Parses a template.
    pub fn new(template: &str) -> Result<Self, BadHintFormat> {
        let mut parts = template.split("{prompt}");
        match (parts.next(), parts.next(), parts.next()) {
            (Some(before), Some(after), None) => Ok(Self { before: before.into(), after: after.into() }),
            _ => Err(BadHintFormat(template.into())),
        }
    }

    /// The template as written.
    pub fn template(&self) -> String {
        format!("{}{{prompt}}{}", self.before, self.after)
    }

    /// The task's prompt with `hint` placed by the template in its last user message (or in
    /// a new user message when the prompt does not end with one). A blank hint (the `retry`
    /// control's: a second try with nothing shown) leaves the prompt as it is.
    pub fn apply(&self, task: &Task, hint: &Hint) -> Vec<Message> {
        if hint.text.trim().is_empty() {
            return task.prompt.clone();
        }
        let fill = |part: &str| part.replace("{hint}", &hint.text);
        let mut prompt = task.prompt.clone();
        match prompt.last_mut() {
            Some(last) if last.role == Role::User => {
                last.content = format!("{}{}{}", fill(&self.before), last.content, fill(&self.after));
            }
            _ => {
                let text = format!("{}{}", fill(&self.before), fill(&self.after));
                prompt.push(Message::user(text.trim_start().to_string()));
            }
        }
        prompt
    }
}

impl Default for HintFormat {
    fn default() -> Self {
        Self { before: String::new(), after: "\n\nHint: {hint}".into() }
    }
}

impl fmt::Debug for HintFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HintFormat({:?})", self.template())
    }
}

impl Serialize for HintFormat {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.template())
    }
}

impl<'de> Deserialize<'de> for HintFormat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        HintFormat::new(&s).map_err(serde::de::Error::custom)
    }
}

/// The task's prompt with the hint appended to its last user message by the default
/// [`HintFormat`] (`"{prompt}\n\nHint: {hint}"`).
pub fn hinted_prompt(task: &Task, hint: &Hint) -> Vec<Message> {
    HintFormat::default().apply(task, hint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mentor_core::{HintLevel, HintSource, MathPayload, Payload, TaskMeta};

    fn task(prompt: Vec<Message>) -> Task {
        Task {
            id: "t".into(),
            prompt,
            payload: Payload::Math(MathPayload { answer: "1".into(), solution: None }),
            meta: TaskMeta::default(),
        }
    }

    fn hint(text: &str) -> Hint {
        Hint { level: HintLevel::NUDGE, text: text.into(), solution_prefix: None, source: HintSource::Mentor }
    }

    #[test]
    fn default_appends_after_a_blank_line() {
        let out = hinted_prompt(&task(vec![Message::user("1+2=")]), &hint("add"));
        assert_eq!(out, vec![Message::user("1+2=\n\nHint: add")]);
    }

    #[test]
    fn templates_place_marker_and_text() {
        let t = task(vec![Message::user("12+3=")]);
        let short = HintFormat::new("{prompt}H").unwrap();
        assert_eq!(short.apply(&t, &hint("ignored")), vec![Message::user("12+3=H")]);
        let before = HintFormat::new("Hint: {hint}\n{prompt}").unwrap();
        assert_eq!(before.apply(&t, &hint("carry")), vec![Message::user("Hint: carry\n12+3=")]);
        // `{hint}` inside the task's own text is not a placeholder.
        let odd = task(vec![Message::user("{hint}")]);
        assert_eq!(HintFormat::default().apply(&odd, &hint("x")), vec![Message::user("{hint}\n\nHint: x")]);
    }

    #[test]
    fn a_blank_hint_leaves_the_prompt_as_it_is() {
        let t = task(vec![Message::system("be brief"), Message::user("1+2=")]);
        assert_eq!(HintFormat::default().apply(&t, &hint("")), t.prompt);
        assert_eq!(HintFormat::new("{prompt}H").unwrap().apply(&t, &hint(" \n")), t.prompt);
    }

    #[test]
    fn a_prompt_without_a_final_user_message_gets_one() {
        let t = task(vec![Message::system("be brief")]);
        let out = HintFormat::default().apply(&t, &hint("add"));
        assert_eq!(out, vec![Message::system("be brief"), Message::user("Hint: add")]);
    }

    #[test]
    fn templates_need_the_prompt_once_and_round_trip() {
        assert!(HintFormat::new("Hint: {hint}").is_err());
        assert!(HintFormat::new("{prompt}{prompt}").is_err());
        let f: HintFormat = serde_json::from_str("\"{prompt}H\"").unwrap();
        assert_eq!(serde_json::to_string(&f).unwrap(), "\"{prompt}H\"");
        assert!(serde_json::from_str::<HintFormat>("\"H\"").unwrap_err().to_string().contains("{prompt}"));
    }
}
