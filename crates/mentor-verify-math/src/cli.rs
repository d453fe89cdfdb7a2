//! The `mentor verify math` JSONL contract, as a library function the binary calls.
//!
//! Input: one JSON object per line, `{"id", "gold", "completion"}` and optionally `"question"`
//! (its words may name what the answer counts, see [`crate::check_with_question`]; `id` any
//! JSON value; blank lines are skipped). Output: one JSON line per input line, in input order:
//! `{"id", "correct": bool, "extracted": str|null, "feedback": {..}}`, where `feedback` is the
//! serialised [`mentor_core::MathFeedback`]. A malformed line yields
//! `{"id": <id or null>, "line": <1-based line number>, "error": "..."}` and the run goes on.
//! A one-line summary is written to the `summary` writer (stderr in the binary) and returned.
//! Lines are checked in parallel in chunks; the output order never changes.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use mentor_core::{MathFeedback, MathOutcome};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Config;
use crate::error::{Error, Result};

const CHUNK: usize = 2048;

/// Totals of one JSONL run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Input lines judged (malformed lines excluded).
    pub checked: usize,
    /// How many were correct.
    pub correct: usize,
    /// Malformed input lines.
    pub malformed: usize,
    /// Count per outcome (`correct`, `wrong_value`, ...).
    pub outcomes: BTreeMap<String, usize>,
}

impl Summary {
    /// The accuracy over judged lines (0 when none).
    pub fn accuracy(&self) -> f64 {
        if self.checked == 0 {
            0.0
        } else {
            self.correct as f64 / self.checked as f64
        }
    }

    /// One human-readable line: `checked 10, correct 7 (70.0%), malformed 1; wrong_value 3`.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "checked {}, correct {} ({:.1}%), malformed {}",
            self.checked,
            self.correct,
            100.0 * self.accuracy(),
            self.malformed
        );
        let others: Vec<String> = self
            .outcomes
            .iter()
            .filter(|(k, _)| k.as_str() != "correct")
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if !others.is_empty() {
            s.push_str("; ");
            s.push_str(&others.join(", "));
        }
        s
    }
}

#[derive(Deserialize)]
struct InputLine {
    #[serde(default)]
    id: Value,
    gold: String,
    completion: String,
    /// The question, optional: its words are neutral in the answer ([`crate::check_with_question`]).
    #[serde(default)]
    question: Option<String>,
}

#[derive(Serialize)]
struct OutputLine<'a> {
    id: &'a Value,
    correct: bool,
    extracted: Option<&'a str>,
    feedback: &'a MathFeedback,
}

#[derive(Serialize)]
struct ErrorLine<'a> {
    id: &'a Value,
    line: usize,
    error: String,
}

enum Item {
    Ok(Value, MathFeedback),
    Bad(Value, usize, String),
}

fn outcome_name(o: MathOutcome) -> String {
    serde_json::to_value(o)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{o:?}"))
}

fn judge(line_no: usize, line: &std::result::Result<String, String>, cfg: &Config) -> Item {
    let line = match line {
        Ok(line) => line,
        Err(why) => return Item::Bad(Value::Null, line_no, why.clone()),
    };
    match serde_json::from_str::<InputLine>(line) {
        Ok(inp) => Item::Ok(
            inp.id,
            crate::check_feedback_with_question(&inp.gold, &inp.completion, inp.question.as_deref(), cfg),
        ),
        Err(e) => {
            // Recover the id if the line is a JSON object with one.
            let id = serde_json::from_str::<Value>(line)
                .ok()
                .and_then(|v| v.get("id").cloned())
                .unwrap_or(Value::Null);
            Item::Bad(id, line_no, format!("malformed input line: {e}"))
        }
    }
}

fn flush(
    chunk: &mut Vec<(usize, std::result::Result<String, String>)>,
    out: &mut dyn Write,
    summary: &mut Summary,
    cfg: &Config,
) -> Result<()> {
    let items: Vec<Item> = chunk.par_iter().map(|(n, l)| judge(*n, l, cfg)).collect();
    for item in &items {
        let json = match item {
            Item::Ok(id, fb) => {
                summary.checked += 1;
                let correct = fb.outcome == MathOutcome::Correct;
                if correct {
                    summary.correct += 1;
                }
                *summary.outcomes.entry(outcome_name(fb.outcome)).or_default() += 1;
                serde_json::to_string(&OutputLine {
                    id,
                    correct,
                    extracted: fb.extracted.as_deref(),
                    feedback: fb,
                })
                .map_err(|source| Error::Json { what: "result line", source })?
            }
            Item::Bad(id, line, error) => {
                summary.malformed += 1;
                serde_json::to_string(&ErrorLine { id, line: *line, error: error.clone() })
                    .map_err(|source| Error::Json { what: "error line", source })?
            }
        };
        writeln!(out, "{json}").map_err(|source| Error::Io { during: "writing output".into(), source })?;
    }
    chunk.clear();
    Ok(())
}

/// Runs the JSONL contract: reads `input`, writes one JSON line per input line to `output`,
/// then writes [`Summary::to_text`] as one line to `summary` and returns the summary.
///
/// Errors only when reading or writing fails; bad input lines become error lines.
pub fn run_jsonl(
    input: impl BufRead,
    mut output: impl Write,
    mut summary_out: impl Write,
    cfg: &Config,
) -> Result<Summary> {
    let mut summary = Summary::default();
    let mut chunk: Vec<(usize, std::result::Result<String, String>)> = Vec::with_capacity(CHUNK);
    for item in mentor_core::input_lines(input) {
        let (line_no, line) = item.map_err(|source| Error::Io { during: "reading input".into(), source })?;
        // A line that is not UTF-8 is reported on its output line; the run goes on.
        let line = line.into_text();
        if line.as_ref().is_ok_and(|l| l.trim().is_empty()) {
            continue;
        }
        chunk.push((line_no, line));
        if chunk.len() >= CHUNK {
            flush(&mut chunk, &mut output, &mut summary, cfg)?;
        }
    }
    flush(&mut chunk, &mut output, &mut summary, cfg)?;
    output.flush().map_err(|source| Error::Io { during: "flushing output".into(), source })?;
    writeln!(summary_out, "{}", summary.to_text())
        .map_err(|source| Error::Io { during: "writing the summary".into(), source })?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_input_in_order_with_errors_inline() {
        let input = concat!(
            r#"{"id":"a","gold":"5","completion":"\\boxed{5}"}"#,
            "\n",
            "not json\n",
            "\n",
            r#"{"id":7,"gold":"1/2","completion":"The answer is 0.4."}"#,
            "\n",
            r#"{"id":"c","gold":"1"}"#,
            "\n",
        );
        let mut out = Vec::new();
        let mut err = Vec::new();
        let s = run_jsonl(input.as_bytes(), &mut out, &mut err, &Config::default()).unwrap();
        let lines: Vec<Value> =
            String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0]["id"], "a");
        assert_eq!(lines[0]["correct"], true);
        assert_eq!(lines[0]["extracted"], "5");
        assert_eq!(lines[0]["feedback"]["outcome"], "correct");
        assert_eq!(lines[1]["line"], 2);
        assert_eq!(lines[1]["id"], Value::Null);
        assert!(lines[1]["error"].as_str().unwrap().contains("malformed"));
        assert_eq!(lines[2]["id"], 7);
        assert_eq!(lines[2]["correct"], false);
        assert_eq!(lines[2]["feedback"]["outcome"], "wrong_value");
        assert_eq!(lines[3]["id"], "c");
        assert_eq!(lines[3]["line"], 5);
        assert_eq!((s.checked, s.correct, s.malformed), (2, 1, 2));
        let text = String::from_utf8(err).unwrap();
        assert!(text.starts_with("checked 2, correct 1 (50.0%), malformed 2"), "{text}");
    }

    #[test]
    fn a_line_that_is_not_utf8_is_named_and_the_rest_is_judged() {
        let mut input = b"{\"id\":1,\"gold\":\"2\",\"completion\":\"2\"}\n".to_vec();
        input.extend_from_slice(b"{\"id\":2,\"gold\":\"2\",\"completion\":\"\xff\"}\n");
        input.extend_from_slice(b"{\"id\":3,\"gold\":\"2\",\"completion\":\"3\"}\n");
        let mut out = Vec::new();
        let s = run_jsonl(input.as_slice(), &mut out, std::io::sink(), &Config::default()).unwrap();
        let lines: Vec<Value> =
            String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1]["line"], 2);
        assert!(lines[1]["error"].as_str().unwrap().contains("not valid UTF-8"), "{}", lines[1]);
        assert_eq!((lines[0]["correct"].as_bool(), lines[2]["correct"].as_bool()), (Some(true), Some(false)));
        assert_eq!((s.checked, s.malformed), (2, 1));
    }
}
