//! `cargo xtask datasets`: installs the public benchmark files listed in
//! `datasets/public.json`, from a local folder (`--from`) or from their canonical sources
//! (with `curl`), verifying every file's sha256 before it is moved into place.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use mentor_core::assets::AssetDir;
use serde::Deserialize;

use crate::hashing::sha256_file;
use crate::process::{python, repo_root, run_quiet};

#[derive(Deserialize)]
struct Manifest {
    files: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    file: String,
    sha256: String,
    url: String,
    #[serde(default)]
    gunzip: bool,
}

fn manifest() -> Result<Manifest> {
    let path = repo_root().join("datasets/public.json");
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("{} is not a valid manifest", path.display()))
}

/// Installs every file of the manifest into `to` (default: the asset directory's datasets).
pub fn install(from: Option<&Path>, to: Option<&Path>) -> Result<()> {
    let dest: PathBuf = match to {
        Some(t) => t.to_path_buf(),
        None => AssetDir::resolve(|k| std::env::var(k).ok())
            .context("cannot place the data directory: set MENTOR_HOME or pass --to")?
            .datasets(),
    };
    let files = manifest()?.files;
    eprintln!("==> datasets: {} files into {}", files.len(), dest.display());
    let (mut installed, mut present) = (0, 0);
    for (i, e) in files.iter().enumerate() {
        let target = dest.join(&e.file);
        let tag = format!("[{}/{}] {}", i + 1, files.len(), e.file);
        if target.is_file() && sha256_file(&target)? == e.sha256 {
            eprintln!("{tag}: present, sha256 ok");
            present += 1;
            continue;
        }
        let parent = target.parent().context("bad manifest path")?;
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        let tmp = parent
            .join(format!(".{}.part", target.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()));
        match from {
            Some(src) => {
                let source = src.join(&e.file);
                std::fs::copy(&source, &tmp).with_context(|| format!("cannot copy {}", source.display()))?;
                eprintln!("{tag}: copied from {}", src.display());
            }
            None => {
                download(&e.url, e.gunzip, &tmp)?;
                eprintln!("{tag}: downloaded");
            }
        }
        let actual = sha256_file(&tmp)?;
        if actual != e.sha256 {
            let _ = std::fs::remove_file(&tmp);
            bail!(
                "{}: sha256 {actual} does not match the manifest's {}; nothing was installed for it",
                e.file,
                e.sha256
            );
        }
        std::fs::rename(&tmp, &target)
            .with_context(|| format!("cannot move {} into place", target.display()))?;
        installed += 1;
    }
    eprintln!(
        "==> datasets: {installed} installed, {present} already present, all sha256-verified in {}",
        dest.display()
    );
    Ok(())
}

fn download(url: &str, gunzip: bool, out: &Path) -> Result<()> {
    let raw = if gunzip { out.with_extension("gz.part") } else { out.to_path_buf() };
    run_quiet(
        Command::new("curl").args(["-fsSL", "--retry", "3", "-o"]).arg(&raw).arg(url),
        &format!("downloading {url}"),
        "needs curl and internet access; or copy the files from a machine that has them and pass --from DIR",
    )?;
    if gunzip {
        let script = "import gzip, shutil, sys\nwith gzip.open(sys.argv[1]) as s, open(sys.argv[2], 'wb') as d:\n    shutil.copyfileobj(s, d)\n";
        run_quiet(
            Command::new(python()).arg("-c").arg(script).arg(&raw).arg(out),
            "gunzip",
            "needs python3",
        )?;
        let _ = std::fs::remove_file(&raw);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manifest's hashes match the shared copy of the data (when it is beside the repo),
    /// and installing from it is verified and idempotent.
    #[test]
    fn install_from_shared_copy() {
        let shared = repo_root().join("../shared/datasets");
        if !shared.join("gsm8k").is_dir() {
            eprintln!("shared/datasets not beside the repository; covered in CI");
            return;
        }
        let dest = tempfile::tempdir().unwrap();
        install(Some(&shared), Some(dest.path())).unwrap();
        for e in manifest().unwrap().files {
            assert_eq!(sha256_file(&dest.path().join(&e.file)).unwrap(), e.sha256, "{}", e.file);
        }
        // Second run: everything present.
        install(Some(&shared), Some(dest.path())).unwrap();
        // A corrupted source is refused and leaves no file behind.
        let bad = tempfile::tempdir().unwrap();
        for e in manifest().unwrap().files {
            let p = bad.path().join(&e.file);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"corrupt").unwrap();
        }
        let out = tempfile::tempdir().unwrap();
        let err = install(Some(bad.path()), Some(out.path())).unwrap_err().to_string();
        assert!(err.contains("does not match"), "{err}");
        assert!(!out.path().join(&manifest().unwrap().files[0].file).exists());
    }
}
