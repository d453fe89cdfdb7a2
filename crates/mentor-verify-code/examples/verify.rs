//! Verifies two completions of a small HumanEval-style task and prints the verdicts as JSON.
//!
//! Needs the runtime built by `cargo xtask setup`; runs offline in about a second once the
//! compiled runtime is cached (the very first run compiles it, 10–60 s).
//!
//! ```text
//! cargo run -p mentor-verify-code --example verify
//! ```

use mentor_core::assets::AssetDir;
use mentor_core::{CodeHarness, CodePayload, Message, Payload, Task, TaskMeta, Verifier};
use mentor_verify_code::{CodeVerifier, Sandbox, SandboxConfig, VerifierConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let assets = AssetDir::resolve(|k| std::env::var(k).ok()).ok_or("set HOME or MENTOR_HOME")?;
    let sandbox = Sandbox::new(&SandboxConfig::from_assets(&assets))?;
    eprintln!("runtime: {:?} in {:.0?}", sandbox.load_report().status, sandbox.load_report().elapsed);

    let prompt = "def running_max(xs: list) -> list:\n    \"\"\"Running maximum: running_max([1, 3, 2]) == [1, 3, 3].\"\"\"\n";
    let test = "def check(candidate):\n    assert candidate([]) == []\n    assert candidate([1, 3, 2]) == [1, 3, 3]\n    assert candidate([5, 1, 7, 0]) == [5, 5, 7, 7]\n";
    let task = Task {
        id: "demo/running_max".into(),
        prompt: vec![Message::user(prompt)],
        payload: Payload::Code(CodePayload {
            harness: CodeHarness::HumanEval {
                prompt: prompt.into(),
                test: test.into(),
                entry_point: "running_max".into(),
            },
            reference_solution: None,
        }),
        meta: TaskMeta::default(),
    };
    let verifier = CodeVerifier::new(&sandbox, VerifierConfig::default());
    let completions = [
        "```python\ndef running_max(xs):\n    out, best = [], None\n    for x in xs:\n        best = x if best is None else max(best, x)\n        out.append(best)\n    return out\n```",
        "    return sorted(xs)\n",
    ];
    for completion in completions {
        let verdict = verifier.verify(&task, completion)?;
        println!("{}", serde_json::to_string_pretty(&verdict)?);
    }
    Ok(())
}
