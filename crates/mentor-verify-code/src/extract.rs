//! Code extraction from model completions: fenced blocks, bare code, and function bodies.

/// Where the extracted code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeSource {
    /// A fenced block tagged `python`/`py`/`python3`.
    PythonFence,
    /// An untagged fenced block.
    BareFence,
    /// The whole completion (no fence).
    WholeText,
}

/// Code extracted from a completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// The code.
    pub code: String,
    /// Where it came from.
    pub source: CodeSource,
}

/// Extracts the program from a completion. Picks the first fenced block tagged as Python;
/// else the first untagged fenced block; else the whole text. When several Python blocks
/// exist and one defines `def <prefer>(`, that one wins (a model may first show a usage
/// example). An unterminated final fence (a completion cut by the length budget) still counts.
/// Returns `None` when nothing but whitespace remains.
pub fn extract_code(completion: &str, prefer: Option<&str>) -> Option<Extracted> {
    let blocks = fenced_blocks(completion);
    let python: Vec<&(String, String)> =
        blocks.iter().filter(|(tag, _)| matches!(tag.as_str(), "python" | "py" | "python3")).collect();
    let pick = |cands: &[&(String, String)]| -> Option<String> {
        if let Some(name) = prefer {
            let needle = format!("def {name}(");
            if let Some(b) = cands.iter().find(|(_, body)| body.contains(&needle)) {
                return Some(b.1.clone());
            }
        }
        cands.first().map(|b| b.1.clone())
    };
    let (code, source) = if let Some(c) = pick(&python) {
        (c, CodeSource::PythonFence)
    } else {
        let bare: Vec<&(String, String)> = blocks.iter().filter(|(tag, _)| tag.is_empty()).collect();
        match pick(&bare) {
            Some(c) => (c, CodeSource::BareFence),
            None => (completion.to_string(), CodeSource::WholeText),
        }
    };
    (!code.trim().is_empty()).then_some(Extracted { code, source })
}

/// `(tag, body)` of every ``` fenced block, in order.
fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix("```") else { continue };
        let tag = rest.trim().to_ascii_lowercase();
        if tag.contains(' ') || tag.contains('`') {
            continue;
        }
        let mut body = String::new();
        for l in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push_str(l);
        }
        out.push((tag, body));
    }
    out
}

/// Assembles a HumanEval program: when `code` defines the entry point at top level it is a
/// whole solution and is appended after the prompt (which keeps the prompt's imports and
/// helpers; its docstring-only function is redefined); otherwise `code` is a body that
/// continues the prompt.
pub fn humaneval_program(prompt: &str, code: &str, entry_point: &str) -> String {
    let def = format!("def {entry_point}(");
    let defines_entry = code.lines().any(|l| l.starts_with(&def) || l.starts_with(&format!("async {def}")));
    if defines_entry {
        let sep = if prompt.ends_with('\n') { "" } else { "\n" };
        format!("{prompt}{sep}\n{code}")
    } else {
        let mut body = code.to_string();
        // A body whose first line lost its indentation (the model started right after the
        // prompt's newline) is re-indented like the lines after it.
        if let Some(first) = body.lines().next() {
            if !first.starts_with(' ') && !first.starts_with('\t') && !first.trim().is_empty() {
                body = format!("    {body}");
            }
        }
        let sep = if prompt.ends_with('\n') { "" } else { "\n" };
        format!("{prompt}{sep}{body}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn prefers_python_fence_and_entry_point() {
        let c = "Here:\n```\nnot this\n```\n```python\nprint(f(1))\n```\n```python\ndef f(x):\n    return x\n```\n";
        let e = extract_code(c, Some("f")).unwrap();
        assert_eq!(e.code, "def f(x):\n    return x\n");
        assert_eq!(e.source, CodeSource::PythonFence);
        let e = extract_code(c, None).unwrap();
        assert_eq!(e.code, "print(f(1))\n");
    }

    #[test]
    fn bare_fence_unterminated_and_whole_text() {
        assert_eq!(extract_code("```\nx = 1\n```", None).unwrap().source, CodeSource::BareFence);
        let cut = extract_code("```python\ndef f():\n    return 1", None).unwrap();
        assert_eq!(cut.code, "def f():\n    return 1");
        let whole = extract_code("    return 1\n", None).unwrap();
        assert_eq!((whole.code.as_str(), whole.source), ("    return 1\n", CodeSource::WholeText));
        assert!(extract_code("  \n ", None).is_none());
        assert!(extract_code("```python\n\n```", None).is_none());
    }

    #[test]
    fn humaneval_assembly() {
        let prompt = "def add(a, b):\n    \"\"\"Add.\"\"\"\n";
        assert_eq!(
            humaneval_program(prompt, "    return a + b\n", "add"),
            format!("{prompt}    return a + b\n")
        );
        assert_eq!(humaneval_program(prompt, "return a + b\n", "add"), format!("{prompt}    return a + b\n"));
        let whole = "def add(a, b):\n    return a + b\n";
        assert_eq!(humaneval_program(prompt, whole, "add"), format!("{prompt}\n{whole}"));
    }

    proptest! {
        #[test]
        fn never_panics_and_code_is_from_input(s in "(```(python)?\n)?[ -~\n]{0,200}(```)?") {
            if let Some(e) = extract_code(&s, Some("f")) {
                prop_assert!(!e.code.trim().is_empty());
                prop_assert!(s.contains(e.code.trim()));
            }
        }
    }
}
