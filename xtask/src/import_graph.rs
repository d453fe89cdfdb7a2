//! Which source file of a crate names which other: the graph that tidy's import-circle
//! checks walk.
//!
//! Each `.rs` file under a crate's `src/` is a node, named by its module path (`src/a/b.rs` and
//! `src/a/b/mod.rs` are both `a::b`); the crate root (`lib.rs`, `main.rs`) and `bin/` are not
//! nodes. A file imports another when its code — outside comments, string literals and items
//! under `#[cfg(test)]` — names it by a path: `crate::…`, `super::…`, `self::…`, or, in a
//! `use` or in code, a path whose first segment is one of its own child modules (`paired::X`
//! from `report/mod.rs`). Grouped `use` lists count path by path. Each path resolves to the
//! longest prefix that is a file, then through the re-exports (`pub use`, any visibility)
//! that file makes: `super::Bootstrap`, from a sibling of `paired.rs`, is an import of
//! `paired.rs` when `report/mod.rs` says `pub use paired::Bootstrap;` and of `report/mod.rs`
//! when the item is that file's own. Glob re-exports (`pub use x::*`) are not followed: a name
//! they bring resolves to the file that makes them.
//!
//! Structure is not an import: `mod x;` declares a child, and a `pub use` (any visibility) of
//! a file's own descendants re-exports them, so neither is an edge (else every `mod.rs` that
//! re-exports its children would be a circle with each of them). Inline modules (`mod simd {
//! … }`) belong to their file: `super::` inside one starts from the inline module. A file
//! included under another name by `#[path]` is its own node under its file's name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path, as its segments (`["report", "paired"]`); the crate root is empty.
pub type ModPath = Vec<String>;

/// A file: its module path and its text as read.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file's module path.
    pub module: ModPath,
    /// Its text, as read.
    pub text: String,
}

/// The sources of the crate rooted at `src`: every `.rs` file with its module path.
pub fn crate_sources(src: &Path) -> Vec<Source> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files.sort();
    let mut sources = Vec::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap_or(&f);
        let mut module: ModPath = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        if module.first().is_some_and(|s| s == "bin") {
            continue;
        }
        let last = module.pop().unwrap_or_default();
        let stem = last.trim_end_matches(".rs").to_string();
        if module.is_empty() && (stem == "lib" || stem == "main") {
            module.clear();
        } else if stem != "mod" {
            module.push(stem);
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        sources.push(Source { module, text });
    }
    sources
}

/// `text` with comments, string and char literals blanked to spaces (newlines kept) and every
/// item under `#[cfg(test)]` removed.
pub fn code_of(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(c.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &[char]| {
        for &ch in s {
            out.push(if ch == '\n' { '\n' } else { ' ' });
        }
    };
    while i < c.len() {
        let rest = &c[i..];
        if rest.starts_with(&['/', '/']) {
            let end = rest.iter().position(|&x| x == '\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(&['/', '*']) {
            let (mut depth, mut j) = (1, 2);
            while j < rest.len() && depth > 0 {
                if rest[j..].starts_with(&['/', '*']) {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(&['*', '/']) {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if let Some(len) = raw_string_len(rest, i.checked_sub(1).map(|p| c[p])) {
            blank(&mut out, &rest[..len]);
            i += len;
        } else if rest[0] == '"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != '"' {
                j += if rest[j] == '\\' { 2 } else { 1 };
            }
            let j = (j + 1).min(rest.len());
            blank(&mut out, &rest[..j]);
            i += j;
        } else if rest[0] == '\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a), which stays.
            let len = if rest.get(1) == Some(&'\\') {
                rest[2..].iter().position(|&x| x == '\'').map(|p| p + 3)
            } else if rest.get(2) == Some(&'\'') {
                Some(3)
            } else {
                None
            };
            match len {
                Some(len) => {
                    blank(&mut out, &rest[..len]);
                    i += len;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(rest[0]);
            i += 1;
        }
    }
    strip_test_items(&out)
}

/// The length of the raw string literal (`r"…"`, `r#"…"#`, `br"…"`) at the start of `s`, if
/// one starts there (`before` is the character before it: `r` must start a token).
fn raw_string_len(s: &[char], before: Option<char>) -> Option<usize> {
    if before.is_some_and(|b| b.is_alphanumeric() || b == '_') {
        return None;
    }
    let mut j = usize::from(s.first() == Some(&'b'));
    if s.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = s[j..].iter().take_while(|&&x| x == '#').count();
    j += hashes;
    if s.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < s.len() {
        if s[j] == '"' && s[j + 1..].iter().take(hashes).filter(|&&x| x == '#').count() == hashes {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(s.len())
}

/// `code` without the items that `#[cfg(test)]` marks: each runs to its first `;` or to the
/// brace that closes its first `{`.
fn strip_test_items(code: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let mut end = item.len();
        let mut depth = 0usize;
        for (k, ch) in item.char_indices() {
            match ch {
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.extend(item[..end].chars().filter(|&ch| ch == '\n'));
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// One path that a file's code names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// The module the mention is written in (the file's, or an inline module inside it).
    pub scope: ModPath,
    /// The path's segments as written (`["super", "paired", "Bootstrap"]`).
    pub path: Vec<String>,
    /// The name it is imported as, when it is a `use` (`as` alias or the last segment).
    pub alias: Option<String>,
    /// Whether it is in a `pub use` (any visibility): a re-export.
    pub reexport: bool,
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// The paths that `code` (see [`code_of`]) names, for the file whose module is `module`: every
/// path of every `use` tree, and every other path that starts with `crate`, `$crate`, `super`
/// or `self` or with an identifier followed by `::` (which [`resolve`] keeps only when it
/// names a child module).
pub fn mentions(module: &ModPath, code: &str) -> Vec<Mention> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    // Inline modules open at a brace depth: (name, the depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let scope = |inline: &[(String, usize)]| {
        let mut s = module.clone();
        s.extend(inline.iter().map(|(n, _)| n.clone()));
        s
    };
    while i < c.len() {
        let ch = c[i];
        if ch == '{' {
            depth += 1;
            i += 1;
            continue;
        }
        if ch == '}' {
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            depth = depth.saturating_sub(1);
            i += 1;
            continue;
        }
        let starts_token = i == 0 || !(is_ident(c[i - 1]) || c[i - 1] == '$');
        if !(starts_token && (is_ident(ch) || ch == '$')) {
            i += 1;
            continue;
        }
        let word_end = i + 1 + c[i + 1..].iter().take_while(|&&x| is_ident(x)).count();
        let word: String = c[i..word_end].iter().collect();
        let after_colons = i >= 2 && c[i - 2] == ':' && c[i - 1] == ':';
        if word == "mod" {
            let mut j = skip_ws(&c, word_end);
            let name_end = j + c[j..].iter().take_while(|&&x| is_ident(x)).count();
            let name: String = c[j..name_end].iter().collect();
            j = skip_ws(&c, name_end);
            if !name.is_empty() && c.get(j) == Some(&'{') {
                depth += 1;
                inline.push((name, depth));
                i = j + 1;
                continue;
            }
            i = name_end;
            continue;
        }
        if word == "use" {
            let reexport = is_pub_before(&c, i);
            let mut paths = Vec::new();
            let mut j = word_end;
            parse_tree(&c, &mut j, Vec::new(), &mut paths);
            let scope = scope(&inline);
            for (path, alias) in paths {
                out.push(Mention { scope: scope.clone(), path, alias, reexport });
            }
            i = j;
            continue;
        }
        let colons = skip_ws(&c, word_end);
        if !after_colons && c[colons..].starts_with(&[':', ':']) {
            let mut paths = Vec::new();
            let mut j = i;
            parse_tree(&c, &mut j, Vec::new(), &mut paths);
            let scope = scope(&inline);
            for (path, _) in paths {
                out.push(Mention { scope: scope.clone(), path, alias: None, reexport: false });
            }
            i = j.max(word_end);
            continue;
        }
        i = word_end;
    }
    out
}

fn skip_ws(c: &[char], mut i: usize) -> usize {
    while i < c.len() && c[i].is_whitespace() {
        i += 1;
    }
    i
}

/// Whether the `use` at `at` is preceded by `pub` or `pub(…)`.
fn is_pub_before(c: &[char], at: usize) -> bool {
    let before: String = c[..at].iter().collect();
    let before = before.trim_end();
    let before = match before.strip_suffix(')') {
        Some(b) => match b.rfind('(') {
            Some(open) => b[..open].trim_end(),
            None => b,
        },
        None => before,
    };
    before.ends_with("pub") && !before[..before.len() - 3].ends_with(is_ident)
}

/// Parses the use tree (or plain path) at `i` into its full paths, each with the name it is
/// imported as (`None` for a glob).
fn parse_tree(c: &[char], i: &mut usize, prefix: Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    *i = skip_ws(c, *i);
    if c[*i..].starts_with(&[':', ':']) && prefix.is_empty() {
        *i += 2;
        *i = skip_ws(c, *i);
    }
    match c.get(*i) {
        Some('{') => {
            *i += 1;
            loop {
                *i = skip_ws(c, *i);
                match c.get(*i) {
                    None => return,
                    Some('}') => {
                        *i += 1;
                        return;
                    }
                    Some(',') => *i += 1,
                    Some(_) => {
                        let before = *i;
                        parse_tree(c, i, prefix.clone(), out);
                        if *i == before {
                            *i += 1;
                        }
                    }
                }
            }
        }
        Some('*') => {
            *i += 1;
            out.push((prefix, None));
        }
        _ => {
            let start = *i;
            if c.get(*i) == Some(&'$') {
                *i += 1;
            }
            *i += c[*i..].iter().take_while(|&&x| is_ident(x)).count();
            let name: String = c[start..*i].iter().collect();
            if name.is_empty() {
                if !prefix.is_empty() {
                    let alias = prefix.last().cloned();
                    out.push((prefix, alias));
                }
                return;
            }
            let mut path = prefix;
            path.push(name.clone());
            let j = skip_ws(c, *i);
            if c[j..].starts_with(&[':', ':']) {
                let k = skip_ws(c, j + 2);
                if c.get(k).is_some_and(|&x| x == '{' || x == '*' || x == '$' || is_ident(x)) {
                    *i = k;
                    parse_tree(c, i, path, out);
                    return;
                }
                *i = j + 2;
                out.push((path, Some(name)));
                return;
            }
            let mut alias = name;
            if c[j..].starts_with(&['a', 's']) && c.get(j + 2).is_some_and(|x| x.is_whitespace()) {
                let k = skip_ws(c, j + 2);
                let end = k + c[k..].iter().take_while(|&&x| is_ident(x)).count();
                alias = c[k..end].iter().collect();
                *i = end;
            }
            if path.last().is_some_and(|s| s == "self") {
                path.pop();
                alias = path.last().cloned().unwrap_or_default();
            }
            out.push((path, Some(alias)));
        }
    }
}

/// The absolute module path that `path`, written in `scope`, names — `None` when it names
/// nothing of this crate's (an extern crate, a local item, a type's associated item).
fn absolute(scope: &ModPath, path: &[String], files: &BTreeSet<ModPath>) -> Option<ModPath> {
    let first = path.first()?;
    let mut abs = match first.as_str() {
        "crate" | "$crate" => Vec::new(),
        "self" => scope.clone(),
        "super" => {
            let mut base = scope.clone();
            let mut k = 0;
            while path.get(k).is_some_and(|s| s == "super") {
                base.pop()?;
                k += 1;
            }
            base.extend(path[k..].iter().cloned());
            return Some(base);
        }
        _ => {
            let mut child = scope.clone();
            child.push(first.clone());
            if !files.iter().any(|f| f.starts_with(&child)) {
                return None;
            }
            scope.clone()
        }
    };
    let skip = usize::from(matches!(first.as_str(), "crate" | "$crate" | "self"));
    abs.extend(path[skip..].iter().cloned());
    Some(abs)
}

/// The file (module path; empty for the crate root) that the absolute path `abs` lands in:
/// its longest prefix that is a file, followed through that file's re-exports.
fn land(
    abs: &[String],
    files: &BTreeSet<ModPath>,
    reexports: &BTreeMap<ModPath, BTreeMap<String, ModPath>>,
) -> ModPath {
    let mut abs = abs.to_vec();
    for _ in 0..16 {
        let k = (0..=abs.len()).rev().find(|&k| k == 0 || files.contains(&abs[..k].to_vec())).unwrap_or(0);
        let file = abs[..k].to_vec();
        let Some(target) = abs.get(k).and_then(|name| reexports.get(&file)?.get(name)) else {
            return file;
        };
        let mut next = target.clone();
        next.extend(abs[k + 1..].iter().cloned());
        if next == abs {
            return file;
        }
        abs = next;
    }
    abs
}

/// `file -> files it imports` (module paths joined by `::`) for the crate whose files are
/// `sources`; the crate root is not a node.
pub fn file_imports(sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
    import_paths(sources).into_iter().map(|(from, tos)| (from, tos.into_keys().collect())).collect()
}

/// `file -> file it imports -> the paths (as written) that import it`: [`file_imports`] with
/// its evidence, for a failure to quote.
pub fn import_paths(sources: &[Source]) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut files: BTreeSet<ModPath> = sources.iter().map(|s| s.module.clone()).collect();
    files.insert(Vec::new());
    let mentioned: Vec<(ModPath, Vec<Mention>)> =
        sources.iter().map(|s| (s.module.clone(), mentions(&s.module, &code_of(&s.text)))).collect();
    // The names each file's `use`s bring in (its children see even the private ones): name ->
    // the absolute path it stands for.
    let mut reexports: BTreeMap<ModPath, BTreeMap<String, ModPath>> = BTreeMap::new();
    for (module, ms) in &mentioned {
        for m in ms {
            if let (Some(alias), Some(abs)) = (&m.alias, absolute(&m.scope, &m.path, &files)) {
                if m.scope == *module {
                    reexports.entry(module.clone()).or_default().insert(alias.clone(), abs);
                }
            }
        }
    }
    let mut graph = BTreeMap::new();
    for (module, ms) in &mentioned {
        if module.is_empty() {
            continue;
        }
        let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for m in ms {
            let Some(abs) = absolute(&m.scope, &m.path, &files) else { continue };
            let to = land(&abs, &files, &reexports);
            let below = to.len() > module.len() && to.starts_with(module);
            if to.is_empty() || to == *module || (m.reexport && below) {
                continue;
            }
            uses.entry(to.join("::")).or_default().insert(m.path.join("::"));
        }
        graph.insert(module.join("::"), uses);
    }
    graph
}

/// `graph` with each node replaced by its top-level module (edges inside one dropped).
pub fn top_level(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let top = |m: &str| m.split("::").next().unwrap_or(m).to_string();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in graph {
        let entry = out.entry(top(from)).or_default();
        entry.extend(tos.iter().map(|t| top(t)).filter(|t| *t != top(from)));
    }
    out
}

/// A cycle of `graph` (as the nodes along it, the first repeated last), if it has one.
pub fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        v: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(v.to_string(), 1);
        path.push(v.to_string());
        for w in graph.get(v).into_iter().flatten() {
            match state.get(w.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = path.iter().position(|p| p == w).unwrap_or(0);
                    let mut cycle = path[start..].to_vec();
                    cycle.push(w.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(w, graph, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(v.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for v in graph.keys() {
        if state.get(v).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(v, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}
