//! The layering the workspace keeps, checked on its sources: no import cycle between the
//! modules of any crate (a module names another with `crate::name`; test modules excluded).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module name -> modules of the same crate it names, for the crate whose sources are in `src`.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut sources = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.extension().is_some_and(|e| e == "rs") && name != "lib" && name != "main" {
            let text = std::fs::read_to_string(&path).unwrap();
            // Unit tests may reach anywhere; comments name modules freely.
            let text = text.split("#[cfg(test)]").next().unwrap().to_string();
            let code: String = text.lines().map(|l| l.split("//").next().unwrap()).collect::<Vec<_>>().join("\n");
            sources.insert(name, code);
        }
    }
    let names: BTreeSet<String> = sources.keys().cloned().collect();
    let mut graph = BTreeMap::new();
    for (module, code) in &sources {
        let mut uses = BTreeSet::new();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let targets: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                group.split('}').next().unwrap().split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).map(|t| t.split("::").next().unwrap()).collect()
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
        for entry in std::fs::read_dir(root.join("crates").join(krate).join("src")).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == "options.rs") || path.extension().is_none_or(|e| e != "rs") {
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
