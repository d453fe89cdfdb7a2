//! Repository hygiene checks, run as ordinary tests (rust-analyzer's `tidy.rs` pattern).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::import_graph::{crate_sources, file_imports, find_cycle, import_paths, top_level, Source};
use crate::process::{cargo, repo_root};

/// Which crates each of ours must never reach, directly or transitively: the layering that
/// `docs/ARCHITECTURE.md` states as each crate's invariants.
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("mentor-core", &["candle-core", "wasmtime", "tokio", "hf-hub"]),
    // The kernels are tensor code only: no model files, no sandbox (and no mentor crate but
    // `mentor-core`: `ONLY_MENTOR_DEPENDENCIES`).
    ("mentor-kernels", &["wasmtime", "tokio", "hf-hub", "minijinja"]),
    ("mentor-policy", &["wasmtime"]),
    ("mentor-grpo", &["wasmtime", "mentor-policy"]),
    ("mentor-verify-math", &["candle-core", "wasmtime"]),
    ("mentor-verify-code", &["candle-core"]),
    // The agents depend on no model and no sandbox: models come in through `ChatModel`
    // (the trainer's `local_mentor` wires a policy), answers through `AnswerEquivalence`.
    (
        "mentor-agents",
        &["wasmtime", "candle-core", "mentor-policy", "mentor-verify-code", "mentor-verify-math"],
    ),
    // The server needs a policy and nothing of training, verifying or mentoring.
    (
        "mentor-serve",
        &[
            "wasmtime",
            "mentor-grpo",
            "mentor-verify-math",
            "mentor-verify-code",
            "mentor-agents",
            "mentor-integration",
            "mentor-trainer",
            "mentor-tasks",
            "mentor-lab",
            "mentor-cli",
        ],
    ),
    // The problem generators are pure functions of their seeds: no model, no sandbox.
    ("mentor-tasks", &["candle-core", "wasmtime", "mentor-policy", "mentor-agents", "mentor-trainer"]),
    // The trainer trains: it measures nothing (mentor-lab), serves nothing, runs no sandbox
    // (the CLI hands it a code verifier) and is no command line.
    ("mentor-trainer", &["wasmtime", "mentor-lab", "mentor-cli", "mentor-serve", "mentor-verify-code"]),
    // The lab measures through the trainer; the command line sits above both.
    ("mentor-lab", &["mentor-cli", "mentor-serve", "wasmtime"]),
    ("xtask", &["candle-core", "wasmtime"]),
    // The Python wheel binds the library crates, never the trainer, the lab or the CLI.
    ("mentor-python", &["mentor-trainer", "mentor-lab", "mentor-cli"]),
];

/// Crates that may reach no workspace crate (`mentor-*`) but the ones listed: the kernels sit
/// under the policy and the GRPO step, so they depend on neither (nor on anything above them).
const ONLY_MENTOR_DEPENDENCIES: &[(&str, &[&str])] = &[("mentor-kernels", &["mentor-core"])];

/// The host's target triple (`rustc -vV`).
fn host() -> String {
    let out = std::process::Command::new("rustc").arg("-vV").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines().find_map(|l| l.strip_prefix("host: ")).unwrap_or_default().trim().to_string()
}

/// The workspace's metadata for the host platform only: offline, `cargo metadata` would
/// otherwise need every other platform's packages (never downloaded by a Linux build) in
/// the package cache.
fn metadata() -> Value {
    let out = cargo()
        .args(["metadata", "--format-version", "1", "--offline", "--filter-platform", &host()])
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn crates_respect_the_dependency_rules() {
    let meta = metadata();
    let names: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut edges: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().unwrap() {
        let deps = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            // Only normal and build dependencies count: dev-dependencies never ship.
            .filter(|d| d["dep_kinds"].as_array().unwrap().iter().any(|k| k["kind"].as_str() != Some("dev")))
            .map(|d| d["pkg"].as_str().unwrap())
            .collect();
        edges.insert(node["id"].as_str().unwrap(), deps);
    }
    // Every package `krate` reaches (itself included), by name.
    let reach = |krate: &str| -> BTreeSet<&str> {
        let Some((root, _)) = names.iter().find(|(_, n)| **n == krate) else {
            panic!("{krate} is not in the workspace")
        };
        let mut seen = BTreeSet::new();
        let mut stack = vec![*root];
        while let Some(id) = stack.pop() {
            if seen.insert(id) {
                stack.extend(edges.get(id).into_iter().flatten());
            }
        }
        seen.into_iter().map(|id| names[id]).collect()
    };
    for (krate, forbidden) in FORBIDDEN {
        for name in reach(krate) {
            assert!(!forbidden.contains(&name), "{krate} must not depend on {name}");
        }
    }
    for (krate, allowed) in ONLY_MENTOR_DEPENDENCIES {
        for name in reach(krate) {
            let ours = name.starts_with("mentor-") && name != *krate;
            assert!(!ours || allowed.contains(&name), "{krate} must not depend on {name}");
        }
    }
}

#[test]
fn every_crate_documents_itself_and_has_no_stubs() {
    let crates = repo_root().join("crates");
    for entry in std::fs::read_dir(&crates).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(dir.join("README.md").is_file(), "{name} has no README.md");
        // A library opens with its crate doc and denies missing docs; a binary-only crate (the
        // CLI: `src/main.rs`, no `src/lib.rs`) opens with its crate doc and exports nothing.
        let (root, lib) = match std::fs::read_to_string(dir.join("src/lib.rs")) {
            Ok(text) => (text, true),
            Err(_) => (
                std::fs::read_to_string(dir.join("src/main.rs"))
                    .unwrap_or_else(|_| panic!("{name} has neither src/lib.rs nor src/main.rs")),
                false,
            ),
        };
        assert!(root.starts_with("//!"), "{name}: its crate root must open with a //! crate doc");
        assert!(!lib || root.contains("#![deny(missing_docs)]"), "{name}: lib.rs must deny missing docs");
        for file in rs_files(&dir.join("src")) {
            let src = std::fs::read_to_string(&file).unwrap();
            // Spelled in pieces so this check does not flag itself.
            for stub in [concat!("todo", "!("), concat!("unimplemented", "!(")] {
                assert!(!src.contains(stub), "{} contains {stub}", file.display());
            }
        }
    }
}

fn rs_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rs_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// `{package: [feature sets]}` of every package `cargo tree <selection>` reaches (normal and
/// build edges; a package built for the host and the target can have two), from its `{p}|{f}`
/// lines.
fn tree_features(selection: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let out = cargo()
        .arg("tree")
        .args(selection)
        .args(["-e", "normal,build", "--prefix", "none", "-f", "{p}|{f}", "--offline"])
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some((p, f)) = line.replace(" (*)", "").split_once('|') {
            map.entry(p.trim().to_owned()).or_default().insert(f.trim().to_owned());
        }
    }
    map
}

#[test]
fn the_python_wheel_build_resolves_the_workspace_s_features() {
    // maturin builds `-p mentor-python` alone. Where a dependency's features differ from the
    // workspace build's, cargo builds a second copy of it and of everything above it (wasmtime,
    // candle: ~10 minutes on 2 cores). mentor-python's Cargo.toml names the crates that would
    // differ; ureq may (TLS: a small crate).
    let alone = tree_features(&["-p", "mentor-python"]);
    let workspace = tree_features(&["--workspace"]);
    for (package, features) in &alone {
        if package.starts_with("ureq ") {
            continue;
        }
        if let Some(theirs) = workspace.get(package) {
            assert_eq!(
                features, theirs,
                "{package}: features differ between `-p mentor-python` and the workspace; enable the \
                 workspace's in crates/mentor-python/Cargo.toml so the wheel build shares its artefacts"
            );
        }
    }
}

/// Every package of the workspace, by name (`cargo metadata`'s workspace members).
fn workspace_packages() -> Vec<String> {
    let meta = metadata();
    let members: BTreeSet<&str> =
        meta["workspace_members"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["id"].as_str().is_some_and(|id| members.contains(id)))
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_readme_crate_table_lists_every_workspace_crate() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let rows: Vec<(&str, &str)> = readme
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            // `| `name` (`dir/`) | purpose |`: the first cell opens with a code span.
            let name = cells.get(1)?.strip_prefix('`')?.split('`').next()?;
            Some((name, *cells.get(2)?))
        })
        .collect();
    for package in workspace_packages() {
        let row = rows.iter().find(|(name, _)| *name == package);
        let (_, purpose) = row.unwrap_or_else(|| panic!("README.md's crate table lacks `{package}`"));
        assert!(purpose.split_whitespace().count() >= 3, "`{package}`'s purpose in README.md is not a line");
    }
}

/// docs/PERFORMANCE.md and docs/RESULTS.md are references (the current figures and results,
/// each with its command, box and date), not work logs: superseded entries go to
/// docs/history.md, and the two stay short enough to read.
#[test]
fn the_reference_docs_stay_references() {
    for (doc, cap) in [("docs/PERFORMANCE.md", 250), ("docs/RESULTS.md", 300)] {
        let text = std::fs::read_to_string(repo_root().join(doc)).unwrap();
        let lines = text.lines().count();
        assert!(
            lines <= cap,
            "{doc} has {lines} lines (at most {cap}): move superseded entries to docs/history.md"
        );
        for line in text.lines().filter(|l| l.starts_with('#')) {
            let dated_log = line.trim_start_matches('#').trim().chars().take(4).all(|c| c.is_ascii_digit());
            assert!(!dated_log, "{doc}: `{line}` is a work-log heading; name the figure, date it in its row");
        }
    }
}

/// A newcomer reads the README in five minutes: under 150 lines, the requirements, both commands
/// and the crate table in it; measurements belong in docs/RESULTS.md and docs/PERFORMANCE.md.
#[test]
fn the_readme_is_short_and_has_what_a_newcomer_needs_first() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines < 150, "README.md has {lines} lines: move details to docs/ or a crate README");
    for heading in ["## Requirements", "## Two commands", "## Crates"] {
        assert!(readme.contains(heading), "README.md lacks `{heading}`");
    }
    let first_screen: String = readme.lines().take(40).collect::<Vec<_>>().join("\n");
    for must in ["## Requirements", "cargo xtask demo", "cargo xtask test"] {
        assert!(first_screen.contains(must), "`{must}` is not in README.md's first 40 lines");
    }
}

/// Files git tracks (the repository as a clone sees it).
fn tracked() -> Vec<String> {
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(repo_root())
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git ls-files failed");
    String::from_utf8_lossy(&out.stdout).split('\0').filter(|s| !s.is_empty()).map(String::from).collect()
}

#[test]
fn no_bytecode_is_committed() {
    let compiled: Vec<String> = tracked()
        .into_iter()
        .filter(|f| f.contains("__pycache__/") || f.ends_with(".pyc") || f.ends_with(".pyo"))
        .collect();
    assert!(compiled.is_empty(), "compiled Python is tracked: {compiled:?}");
}

#[test]
fn no_file_cites_a_document_the_repository_lacks() {
    // A document named in prose (an upper-case name such as the architecture document, or a
    // path into docs/) must be a tracked file; names of files that runs write (a run's
    // `report.md`) are allowed by the list below.
    const WRITTEN_BY_RUNS: &[&str] = &["report.md", "pooled.md", "summary.md", "CHANGELOG.md"];
    let files = tracked();
    let names: BTreeSet<&str> = files.iter().map(|f| f.rsplit('/').next().unwrap_or(f)).collect();
    let mut missing = Vec::new();
    for f in files.iter().filter(|f| [".rs", ".md", ".py", ".toml"].iter().any(|e| f.ends_with(e))) {
        let Ok(text) = std::fs::read_to_string(repo_root().join(f)) else { continue };
        for (i, _) in text.match_indices(".md") {
            let start = text[..i]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.')))
                .map_or(0, |s| s + 1);
            let cited = &text[start..i + 3];
            let file = cited.rsplit('/').next().unwrap_or(cited);
            let stem = file.trim_end_matches(".md");
            // Upper-case document names and paths into docs/.
            let is_doc = (!stem.is_empty() && stem.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
                || cited.contains("docs/");
            if is_doc && !names.contains(file) && !WRITTEN_BY_RUNS.contains(&file) {
                missing.push(format!("{f}: {cited}"));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "documents cited but not in the repository: {missing:?}");
}

#[test]
fn no_crate_exports_an_item_at_two_paths() {
    // `pub mod m;` beside `pub use m::Item;` makes `Item` reachable as `crate::m::Item` and
    // `crate::Item`, and callers split between them: a module is public or re-exported, not both.
    for entry in std::fs::read_dir(repo_root().join("crates")).unwrap() {
        let lib = entry.unwrap().path().join("src/lib.rs");
        let Ok(text) = std::fs::read_to_string(&lib) else { continue };
        let public: Vec<&str> =
            text.lines().filter_map(|l| l.trim().strip_prefix("pub mod ")?.strip_suffix(';')).collect();
        for m in public {
            let reexport = format!("pub use {m}::");
            assert!(
                !text.lines().any(|l| l.trim().starts_with(&reexport)),
                "{}: `pub mod {m}` and `{reexport}…` export the same items twice",
                lib.display()
            );
        }
    }
}

/// Every crate's `src/` and xtask's.
fn source_roots() -> Vec<std::path::PathBuf> {
    let root = repo_root();
    let mut srcs: Vec<std::path::PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    srcs.push(root.join("xtask/src"));
    srcs.sort();
    srcs
}

/// A crate's files import one another in one direction: each can be read with only what is
/// below it. (See `import_graph` for what counts as an import.)
#[test]
fn no_crate_has_an_import_circle_among_its_files() {
    for src in source_roots() {
        let imports = import_paths(&crate_sources(&src));
        let graph = imports.iter().map(|(from, tos)| (from.clone(), tos.keys().cloned().collect())).collect();
        if let Some(cycle) = find_cycle(&graph) {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| format!("{} -> {} (by {:?})", w[0], w[1], imports[&w[0]][&w[1]]))
                .collect();
            panic!("{}: files import each other in a circle:\n  {}", src.display(), steps.join("\n  "));
        }
    }
}

/// A crate's top-level modules import one another in one direction too (the architecture's
/// layering, inside a crate): files in a line can still make a circle of the modules that hold
/// them (`a/x.rs -> b/y.rs -> a/z.rs`).
#[test]
fn no_crate_has_an_import_circle_among_its_top_level_modules() {
    for src in source_roots() {
        let graph = top_level(&file_imports(&crate_sources(&src)));
        if let Some(cycle) = find_cycle(&graph) {
            panic!(
                "{}: top-level modules import each other in a circle: {}",
                src.display(),
                cycle.join(" -> ")
            );
        }
    }
}

#[test]
fn the_cycle_finder_finds_a_circle_and_only_a_circle() {
    let g = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    assert_eq!(find_cycle(&g(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
    let c = find_cycle(&g(&[("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")])).unwrap();
    assert_eq!(c.first(), c.last());
    assert_eq!(c.len(), 4);
}

#[test]
fn the_import_graph_resolves_paths_to_files() {
    let source = |module: &str, text: &str| Source {
        module: module.split("::").filter(|s| !s.is_empty()).map(String::from).collect(),
        text: text.to_string(),
    };
    let mut sources = vec![
        source("", "mod other;\nmod report;\npub use other::Thing;"),
        source(
            "report",
            "mod markdown;\npub mod paired;\npub use paired::Bootstrap;\npub(crate) use self::markdown::{render, Page};\n\
             pub struct Report;\nfn write() { let _ = markdown::render(); }",
        ),
        source(
            "report::markdown",
            "use super::{Report, Bootstrap as B};\nuse crate::report::paired::{self, x::{y, z}};\n\
             // crate::other::Z in a comment\n/* super::super::other */\n\
             fn g() -> &'static str { let _c = '\"'; \"crate::other::Q in a string\" }",
        ),
        source(
            "report::paired",
            "use super::super::Thing;\npub struct Bootstrap;\n\
             #[cfg(test)]\nmod tests {\n    use crate::report::markdown::render;\n}\nfn after() {}",
        ),
        source("other", "pub struct Thing;\nmod inline {\n    use super::Thing;\n    fn f() { self::g(); }\n}"),
    ];
    let graph = file_imports(&sources);
    let edges = |m: &str| graph[m].iter().map(String::as_str).collect::<Vec<_>>();
    // Bare child paths count; the re-exports of its own children do not.
    assert_eq!(edges("report"), ["report::markdown"]);
    // `super::Report` is the parent's own; `super::Bootstrap` is re-exported from `paired`.
    assert_eq!(edges("report::markdown"), ["report", "report::paired"]);
    // `super::super::Thing` lands in the crate root and follows its re-export to `other`;
    // the test module names nothing.
    assert_eq!(edges("report::paired"), ["other"]);
    // An inline module's `super` is its own file; comments and strings name nothing.
    assert!(edges("other").is_empty());
    assert!(!graph.contains_key(""), "the crate root is not a node");
    // The parent that calls its child while the child uses the parent's type is a circle.
    assert_eq!(find_cycle(&graph).unwrap(), ["report", "report::markdown", "report"]);
    sources[1].text = sources[1].text.replace("fn write() { let _ = markdown::render(); }", "");
    assert_eq!(find_cycle(&file_imports(&sources)), None);
    // A grouped `use` path (`x::{y, z}`) resolves to the longest prefix that is a file.
    sources.push(source("report::paired::x", "pub fn y() {}\npub fn z() { crate::report::markdown::g(); }"));
    let graph = file_imports(&sources);
    assert_eq!(
        graph["report::markdown"].iter().map(String::as_str).collect::<Vec<_>>(),
        ["report", "report::paired", "report::paired::x"]
    );
    assert_eq!(find_cycle(&graph).unwrap(), ["report::markdown", "report::paired::x", "report::markdown"]);
    assert_eq!(find_cycle(&top_level(&graph)), None, "one top-level module");
}
