//! The layering the workspace keeps, checked on its sources: no import cycle between the
//! modules of any crate (a module names another with `crate::name`; test modules excluded).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every `.rs` file under `dir`, subdirectories included.
fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    files_ending(dir, "rs")
}

/// Every file under `dir` with the extension `ext`, sorted.
fn files_ending(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_ending(&path, ext));
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// A source's code before its unit tests, comments removed.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    // Unit tests may reach anywhere; comments name modules freely.
    let text = text.split("#[cfg(test)]").next().unwrap().to_string();
    text.lines().map(|l| l.split("//").next().unwrap()).collect::<Vec<_>>().join("\n")
}

/// Module name -> modules of the same crate it names, for the crate whose sources are in `src`.
/// A module kept as a directory (`name/mod.rs` and its children) is one module: what any of its
/// files names, it names.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut sources: BTreeMap<String, String> = BTreeMap::new();
    for path in rust_files(src) {
        let relative = path.strip_prefix(src).unwrap();
        let name = match relative.components().next() {
            Some(first) if relative.components().count() > 1 => first.as_os_str().to_string_lossy().into_owned(),
            _ => path.file_stem().unwrap().to_string_lossy().into_owned(),
        };
        if name != "lib" && name != "main" {
            let code = sources.entry(name).or_default();
            code.push_str(&code_of(&path));
            code.push('\n');
        }
    }
    let names: BTreeSet<String> = sources.keys().cloned().collect();
    let mut graph = BTreeMap::new();
    for (module, code) in &sources {
        let mut uses = BTreeSet::new();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let targets: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                group
                    .split('}')
                    .next()
                    .unwrap()
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .map(|t| t.split("::").next().unwrap())
                    .collect()
            } else {
                vec![rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap()]
            };
            uses.extend(targets.into_iter().filter(|t| names.contains(*t) && *t != module).map(String::from));
        }
        graph.insert(module.clone(), uses);
    }
    graph
}

/// A cycle through `graph`, if there is one (depth-first search with colours).
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(node: &str, graph: &BTreeMap<String, BTreeSet<String>>, done: &mut BTreeSet<String>, path: &mut Vec<String>) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in &graph[node] {
            if let Some(cycle) = visit(next, graph, done, path) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

#[test]
fn no_module_imports_another_that_imports_it_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for krate in ["verifier", "gpu", "prover", "cli"] {
        let graph = module_graph(&root.join("crates").join(krate).join("src"));
        assert!(graph.len() >= 2, "crates/{krate}: only {} modules found", graph.len());
        if let Some(cycle) = find_cycle(&graph) {
            panic!("crates/{krate}: modules import each other: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn the_cycle_check_finds_cycles() {
    let graph: BTreeMap<String, BTreeSet<String>> = [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"]), ("d", vec![])]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
        .collect();
    assert_eq!(find_cycle(&graph), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
}

/// Settings at the edge: library code reads no environment variable outside the options
/// constructors (`GpuOptions::from_env`, `DriverOptions::from_env`, each in its crate's
/// options.rs).
#[test]
fn only_the_options_constructors_read_the_environment() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for krate in ["verifier", "gpu", "prover"] {
        for path in rust_files(&root.join("crates").join(krate).join("src")) {
            if path.file_name().is_some_and(|n| n == "options.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap();
            for (i, line) in code.lines().enumerate() {
                let line = line.split("//").next().unwrap();
                assert!(!line.contains("std::env") && !line.contains("env::var"), "{}:{}: reads the environment: {line}", path.display(), i + 1);
            }
        }
    }
}

/// whir-gpu names no WHIR protocol step, in Rust or WGSL: no out-of-domain samples, round
/// heads, query grinds or WHIR transcript (what the protocol needs of the device is generic:
/// a duplex sponge, sumcheck rounds, grinds).
#[test]
fn whir_gpu_names_no_whir_protocol_step() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = rust_files(&root.join("crates/gpu/src"));
    let wgsl = files_ending(&root.join("crates/gpu/wgsl"), "wgsl");
    assert!(wgsl.len() >= 30, "only {} WGSL files found", wgsl.len());
    files.extend(wgsl);
    let banned =
        ["ood", "out-of-domain", "out of domain", "round head", "round's head", "query grind", "query pow", "whir transcript", "whir's", "whir round", "stir"];
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap().to_lowercase();
        for (i, line) in text.lines().enumerate() {
            for word in banned {
                let hit = line.match_indices(word).any(|(at, _)| {
                    // Whole words only ("food", "stirring" and "whir_gpu" are not protocol names).
                    let before = line[..at].chars().next_back();
                    let after = line[at + word.len()..].chars().next();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                });
                assert!(!hit, "{}:{}: names a WHIR protocol step ({word:?}): {}", path.display(), i + 1, line.trim());
            }
        }
    }
}

/// The prover's protocol side names no whir-gpu type: of the protocol (`protocol.rs`,
/// `rounds.rs`, the claim phase, the sumcheck and the challengers' vocabulary, the hiding run)
/// and the backend module, only `backend/gpu.rs` (the GPU backend) names `whir_gpu`. (The PCS
/// adapters, `pcs.rs` and `hiding/pcs.rs`, name the GPU's challenger as their default.)
#[test]
fn only_the_gpu_backend_names_whir_gpu_on_the_protocol_side() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/prover/src");
    let protocol_side = ["protocol.rs", "rounds.rs", "claims.rs", "sumcheck.rs", "lookahead.rs", "breakdown.rs", "backend", "hiding"];
    let mut checked = 0;
    for name in protocol_side {
        let path = src.join(name);
        let files = if path.is_dir() { rust_files(&path) } else { vec![path] };
        for file in files {
            if file.ends_with("backend/gpu.rs") || file.ends_with("hiding/pcs.rs") {
                continue;
            }
            checked += 1;
            assert!(!code_of(&file).contains("whir_gpu"), "{} names whir_gpu: only backend/gpu.rs may", file.display());
        }
    }
    assert!(checked >= 12, "only {checked} protocol-side files found");
}

/// The comments in crates/gpu/wgsl name files that exist: every `crates/...` path and every
/// kernel file (`dir/file.wgsl`) a comment names is there, and each "Rust twin" a comment names
/// (`Name` in crates/...rs) is a struct defined in that file.
#[test]
fn wgsl_comments_name_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let kernels = root.join("crates/gpu/wgsl");
    // A comment's words, punctuation around paths and names removed.
    let tokens = |text: &str| -> Vec<String> {
        text.split(|c: char| c.is_whitespace() || "(),;:`".contains(c)).map(|t| t.trim_end_matches('.')).filter(|t| !t.is_empty()).map(String::from).collect()
    };
    let mut checked = 0;
    for path in files_ending(&kernels, "wgsl") {
        // The comments as one text; a path broken over lines ("crates/x/\n// y.rs") is rejoined.
        let mut comments = String::new();
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let Some((_, comment)) = line.split_once("//") else { continue };
            if !comments.ends_with('/') {
                comments.push(' ');
            }
            comments.push_str(comment.trim());
        }
        for token in tokens(&comments) {
            let named = if token.starts_with("crates/") {
                root.join(&token)
            } else if token.ends_with(".wgsl") && token.contains('/') && !token.contains(['*', '<']) {
                kernels.join(&token)
            } else {
                continue;
            };
            assert!(named.exists(), "{}: a comment names {token}, which does not exist", path.display());
            checked += 1;
        }
        for (at, _) in comments.match_indices("Rust twin") {
            let rest = &comments[at..];
            let file = tokens(rest)
                .into_iter()
                .find(|t| t.starts_with("crates/") && t.ends_with(".rs"))
                .unwrap_or_else(|| panic!("{}: a Rust twin without its file: {rest}", path.display()));
            let twin_text = &rest[..rest.find(&file).unwrap()];
            let source = std::fs::read_to_string(root.join(&file)).unwrap();
            for name in twin_text.split('`').skip(1).step_by(2) {
                if name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    assert!(source.contains(&format!("struct {name}")), "{}: the Rust twin `{name}` is not defined in {file}", path.display());
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 40, "only {checked} names checked");
}
