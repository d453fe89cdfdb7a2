//! `cargo xtask experiment edge`: the training experiment of issue 58 over `mentor experiment`
//! with the `edge-smollm2` preset. `--sweep` first runs the learning-rate sweep of vanilla runs
//! alone (seed 0, 40 steps, evaluated on the training family's held-out problems) into
//! `docs/results/edge/sweep/`; the arms then run only at the rate the sweep's rule chose, which
//! the preset must carry. Runs whose result file exists are not run again; an interrupted run
//! resumes from its checkpoint (under `runs/edge/`, out of git); every finished result is
//! pooled into `docs/results/edge/pooled.md` and the learning curves' SVGs. Without `--arms`
//! and `--seeds` it runs the four main arms on seeds 0-2, then `dapo` on seed 0.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::process::{cargo, repo_root, run, target_dir};

/// The sweep's values of `grpo.learning_rate` (1e-6, the GSM8K preset's rate, moves nothing in
/// 60 steps).
pub const SWEEP_RATES: &str = "3e-6,1e-5,3e-5,1e-4";
/// Steps of each sweep run.
pub const SWEEP_STEPS: usize = 40;

const PRESET: &str = "edge-smollm2";
/// The default plan, in order: the four main arms on three seeds, then `dapo` (dynamic
/// sampling, the baseline TRL and verl users reach for) on seed 0 only, as issue 58 asks. Each
/// pass pools every result file there is.
const PASSES: [(&str, &str); 2] = [("vanilla,retry,mentor,random_step", "0,1,2"), ("dapo", "0")];
const RESULTS: &str = "docs/results/edge";

/// What to run.
pub struct Plan<'a> {
    /// The sweep instead of the arms.
    pub sweep: bool,
    /// Arms (empty: the four main arms; with `seeds` empty too, also `dapo` on seed 0).
    pub arms: &'a [String],
    /// Seeds (empty: 0, 1, 2).
    pub seeds: &'a [u64],
    /// Pool the result files only.
    pub pool_only: bool,
    /// Extra arguments for `mentor experiment`.
    pub extra: &'a [String],
}

/// Runs the experiment (or its sweep) as `plan` says.
pub fn experiment(plan: &Plan<'_>) -> Result<()> {
    let assets = crate::assets::setup()?;
    eprintln!("==> cargo build --workspace --bins");
    run(cargo().args(["build", "--workspace", "--bins"]), "cargo build --bins")?;
    let root = repo_root();
    let mut args: Vec<String> =
        vec!["--threads".into(), "2".into(), "experiment".into(), "--config".into(), PRESET.into()];
    args.extend(["--commit".into(), commit(&root)]);
    if plan.sweep {
        args.extend(["--arms".into(), "vanilla".into(), "--seeds".into(), "0".into()]);
        args.extend([
            "--results".into(),
            format!("{RESULTS}/sweep"),
            "--runs".into(),
            "runs/edge-sweep".into(),
            "--sweep".into(),
            format!("grpo.learning_rate={SWEEP_RATES}"),
            "--sweep-set".into(),
            "same_templates".into(),
        ]);
        for set in [
            format!("run.steps={SWEEP_STEPS}"),
            "eval.k=0".into(),
            "eval.sets=[{ name = \"same_templates\", tasks = \"arith 2-step seed 7\", n = 200 }]".into(),
        ] {
            args.extend(["--set".into(), set]);
        }
    } else if !plan.pool_only {
        check_rate(&root)?;
    }
    let passes: Vec<Vec<String>> = if plan.sweep {
        vec![Vec::new()]
    } else {
        passes(plan)
            .into_iter()
            .map(|(arms, seeds)| {
                let results = [RESULTS, "--runs", "runs/edge"].map(String::from);
                ["--arms".into(), arms, "--seeds".into(), seeds, "--results".into()]
                    .into_iter()
                    .chain(results)
                    .collect()
            })
            .collect()
    };
    let bin = target_dir().join("debug").join(format!("mentor{}", std::env::consts::EXE_SUFFIX));
    let t0 = Instant::now();
    for pass in passes {
        let mut args = args.clone();
        args.extend(pass);
        if plan.pool_only {
            args.push("--pool-only".into());
        }
        args.extend(plan.extra.iter().cloned());
        eprintln!("==> mentor {}", args.join(" "));
        let mut cmd = std::process::Command::new(&bin);
        cmd.current_dir(&root).args(&args).env(mentor_core::assets::HOME_VAR, assets.root());
        run(&mut cmd, "mentor experiment")?;
    }
    eprintln!("==> experiment done in {:.1} min", t0.elapsed().as_secs_f64() / 60.0);
    Ok(())
}

/// The `(arms, seeds)` of each `mentor experiment` pass of the arms: [`PASSES`] when the plan
/// names neither (pooling alone needs one pass: it reads every result file), else one pass of
/// what it names, the main plan's for what it leaves out.
fn passes(plan: &Plan<'_>) -> Vec<(String, String)> {
    if plan.arms.is_empty() && plan.seeds.is_empty() && !plan.pool_only {
        return PASSES.iter().map(|(a, s)| (a.to_string(), s.to_string())).collect();
    }
    let arms = if plan.arms.is_empty() { PASSES[0].0.to_string() } else { plan.arms.join(",") };
    let seeds = if plan.seeds.is_empty() {
        PASSES[0].1.to_string()
    } else {
        plan.seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
    };
    vec![(arms, seeds)]
}

/// The arms run at the sweep's choice only: the preset's `grpo.learning_rate` must be the rate
/// `docs/results/edge/sweep/sweep.json` marks chosen.
fn check_rate(root: &Path) -> Result<()> {
    let sweep_file = root.join(RESULTS).join("sweep/sweep.json");
    let text = std::fs::read_to_string(&sweep_file).with_context(|| {
        format!(
            "reading {}: the arms run at the rate the sweep chooses\nhint: run `cargo xtask experiment edge --sweep` first",
            sweep_file.display()
        )
    })?;
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", sweep_file.display()))?;
    let Some(chosen) = rows.iter().find(|r| r["chosen"] == true).and_then(|r| r["value"].as_str()) else {
        bail!("{}: no rate met the sweep's rule; the experiment has no rate to run at", sweep_file.display());
    };
    let preset_file = root.join("crates/mentor-trainer/configs").join(format!("{PRESET}.toml"));
    let preset = std::fs::read_to_string(&preset_file)
        .with_context(|| format!("reading {}", preset_file.display()))?;
    let rate = preset_rate(&preset)
        .with_context(|| format!("{}: no [grpo] learning_rate", preset_file.display()))?;
    let chosen_rate: f64 =
        chosen.parse().with_context(|| format!("{}: rate `{chosen}`", sweep_file.display()))?;
    if (rate - chosen_rate).abs() > chosen_rate * 1e-9 {
        bail!(
            "{} has grpo.learning_rate = {rate:e}, the sweep chose {chosen}\nhint: set learning_rate = {chosen} in the preset (and commit it) before the arms run",
            preset_file.display()
        );
    }
    Ok(())
}

/// `learning_rate` of a TOML text's `[grpo]` table.
fn preset_rate(toml: &str) -> Option<f64> {
    let mut in_grpo = false;
    for line in toml.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            in_grpo = line == "[grpo]";
        } else if in_grpo {
            if let Some(v) = line.strip_prefix("learning_rate") {
                return v.trim_start().strip_prefix('=')?.trim().parse().ok();
            }
        }
    }
    None
}

/// The commit the binaries are built from (`-dirty` when tracked files differ from it).
fn commit(root: &Path) -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .current_dir(root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(head) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(s) if !s.is_empty() => format!("{head}-dirty"),
            _ => head,
        },
        None => "unknown".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::{passes, preset_rate, Plan};

    fn plan<'a>(arms: &'a [String], seeds: &'a [u64], pool_only: bool) -> Plan<'a> {
        Plan { sweep: false, arms, seeds, pool_only, extra: &[] }
    }

    #[test]
    fn the_default_plan_runs_the_main_arms_then_dapo_on_seed_0() {
        let main = || ("vanilla,retry,mentor,random_step".to_string(), "0,1,2".to_string());
        assert_eq!(passes(&plan(&[], &[], false)), vec![main(), ("dapo".into(), "0".into())]);
        assert_eq!(passes(&plan(&[], &[], true)), vec![main()], "pooling reads every file in one pass");
        let dapo = ["dapo".to_string()];
        assert_eq!(passes(&plan(&dapo, &[], false)), vec![("dapo".into(), "0,1,2".into())]);
        let (arms, _) = main();
        assert_eq!(passes(&plan(&[], &[1, 2], false)), vec![(arms, "1,2".into())]);
    }

    #[test]
    fn the_rate_is_read_from_the_grpo_table_only() {
        let text = "[pretrain]\nlearning_rate = 0.003\n[grpo]\n# note\nlearning_rate = 1e-5   # chosen\nbeta = 0.0\n";
        assert_eq!(preset_rate(text), Some(1e-5));
        assert_eq!(preset_rate("[pretrain]\nlearning_rate = 0.003\n"), None);
        let shipped = include_str!("../../crates/mentor-trainer/configs/edge-smollm2.toml");
        assert!(preset_rate(shipped).is_some(), "the preset names its rate in [grpo]");
    }
}
