//! [`Rewritten`]: a mentor that sees the task's reference solution through a
//! [`ReferenceRewrite`] (e.g. a teacher's layout turned into the learner's own).

use mentor_core::{Intervention, Mentor, MentorError, MentorRequest, ReferenceRewrite};

/// `inner`, asked with a copy of the task whose reference solution went through `rewrite`
/// (unchanged where `rewrite` gives `None`, or the task has no reference). Wrap the mentor and
/// every control that reads the reference with the same rewrite.
pub struct Rewritten {
    inner: Box<dyn Mentor>,
    rewrite: ReferenceRewrite,
}

impl Rewritten {
    /// `inner` behind `rewrite`.
    pub fn new(inner: Box<dyn Mentor>, rewrite: ReferenceRewrite) -> Self {
        Self { inner, rewrite }
    }
}

impl std::fmt::Debug for Rewritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rewritten").field("inner", &self.inner.name()).finish()
    }
}

impl Mentor for Rewritten {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn intervene(&self, request: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
        let rewritten = request.task.reference_solution().and_then(|s| (self.rewrite)(s));
        match rewritten {
            Some(solution) => {
                let task = request.task.with_reference_solution(solution);
                self.inner.intervene(&MentorRequest { task: &task, ..*request })
            }
            None => self.inner.intervene(request),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use mentor_core::{Hint, HintLevel, HintSource, Task};

    use super::*;

    /// Records the reference it was asked with.
    struct Spy(Arc<Mutex<Option<String>>>);

    impl Mentor for Spy {
        fn name(&self) -> &str {
            "spy"
        }
        fn intervene(&self, request: &MentorRequest<'_>) -> Result<Intervention, MentorError> {
            *self.0.lock().unwrap() = request.task.reference_solution().map(str::to_string);
            let hint = Hint {
                level: request.level,
                text: "h".into(),
                solution_prefix: None,
                source: HintSource::Mentor,
            };
            Ok(Intervention { diagnosis: None, hint: Some(hint), rejections: vec![], redactions: vec![] })
        }
    }

    #[test]
    fn the_inner_mentor_sees_the_rewritten_reference() {
        let seen = Arc::new(Mutex::new(None));
        let m = Rewritten::new(Box::new(Spy(seen.clone())), Arc::new(|s: &str| Some(s.to_uppercase())));
        let task = Task::math("t", "1+1=", "2").with_reference_solution("one plus one".into());
        let req = MentorRequest { task: &task, attempts: &[], level: HintLevel::NUDGE, previous_hints: &[] };
        m.intervene(&req).unwrap();
        assert_eq!(seen.lock().unwrap().as_deref(), Some("ONE PLUS ONE"));
        assert_eq!(m.name(), "spy");
        // `None` from the rewrite: the task as it is.
        let keep = Rewritten::new(Box::new(Spy(seen.clone())), Arc::new(|_: &str| None));
        keep.intervene(&req).unwrap();
        assert_eq!(seen.lock().unwrap().as_deref(), Some("one plus one"));
    }
}
