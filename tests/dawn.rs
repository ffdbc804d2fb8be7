//! Every kernel in its portable form compiled by Dawn, Chrome's WebGPU engine (its WGSL compiler
//! is Tint, not naga), with no error and no warning, and its compute pipeline built at WebGPU's
//! default limits: the emulated multiply (WGSL has no 64-bit integers), every kernel, with each
//! NTT tile an adapter under the strict profile can be given (2^6 to 2^12 words; the in-place and
//! butterfly-free variants too). naga accepts constructs Tint rejects (naga does no uniformity
//! analysis, for one), so a kernel only naga has checked may fail in a browser.
//!
//! Runs `scripts/dawn/compile.mjs` under Node with the npm package `webgpu` (Dawn for Node) on
//! SwiftShader, Chrome's software Vulkan driver; `scripts/test.sh` installs both under
//! `target/dawn` and says where (`WHIR_DAWN_DIR`). Without them the test skips with a message,
//! unless WHIR_REQUIRE_GPU=1 (CI), where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use whir_wgpu::gpu::shaders::{compose, Kernel, MulVariant};

/// Where the test command installed Dawn for Node and SwiftShader, if it did.
fn dawn_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("WHIR_DAWN_DIR").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dawn"));
    let ready = dir.join("node_modules/webgpu/index.js").is_file() && dir.join("swiftshader/vk_swiftshader_icd.json").is_file();
    ready.then_some(dir)
}

fn skip_or_fail(why: &str) {
    if std::env::var("WHIR_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("WHIR_REQUIRE_GPU=1 but the Dawn test cannot run: {why}");
    }
    eprintln!("skipping the Dawn test: {why} (scripts/test.sh installs Node's `webgpu` package and SwiftShader under target/dawn)");
}

/// Each kernel's portable composition: (a file name, the source, the entry point).
fn portable_kernels() -> Vec<(String, String, &'static str)> {
    let mut out = Vec::new();
    for kernel in Kernel::ALL {
        let defaults = kernel.default_consts();
        let mut variants: Vec<Vec<(&str, u32)>> = vec![defaults.to_vec()];
        if defaults.iter().any(|&(k, _)| k == "NTT_TILE") {
            variants = (6..=12)
                .flat_map(|tile_log| {
                    [(0, 0), (1, 0), (0, 1)].map(|(in_place, skip)| {
                        defaults
                            .iter()
                            .map(|&(k, v)| match k {
                                "NTT_TILE" => (k, 1u32 << tile_log),
                                "NTT_IN_PLACE" => (k, in_place),
                                "NTT_SKIP_BUTTERFLIES" => (k, skip),
                                _ => (k, v),
                            })
                            .collect()
                    })
                })
                .collect();
        }
        for consts in variants {
            let src = compose(kernel.source_name(), MulVariant::Emulated, &consts).unwrap();
            let tag: String = consts.iter().map(|(k, v)| format!("_{k}{v}")).collect();
            out.push((format!("{}_{}{tag}.wgsl", kernel.source_name().replace('/', "_"), kernel.entry_point()), src, kernel.entry_point()));
        }
    }
    out
}

#[test]
fn every_kernel_compiles_in_dawn_at_webgpu_default_limits() {
    // The kernels compiled here do not depend on the limits profile: CI's strict pass
    // (WHIR_LIMITS=webgpu) leaves them to its first pass.
    if std::env::var("WHIR_LIMITS").is_ok_and(|v| v == "webgpu") {
        eprintln!("skipping the Dawn test under WHIR_LIMITS=webgpu: it compiles the same portable kernels in every profile (run without WHIR_LIMITS)");
        return;
    }
    let Some(dir) = dawn_dir() else {
        return skip_or_fail("Dawn for Node or SwiftShader is not installed");
    };
    if Command::new("node").arg("--version").output().is_err() {
        return skip_or_fail("no `node` on the PATH");
    }
    let out = tempfile::tempdir().unwrap();
    let kernels = portable_kernels();
    let mut manifest = Vec::new();
    for (name, src, entry) in &kernels {
        let file = out.path().join(name);
        std::fs::write(&file, src).unwrap();
        manifest.push(serde_json::json!({ "file": file, "entry": entry }));
    }
    let manifest_path = out.path().join("manifest.json");
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/dawn/compile.mjs");
    let run = Command::new("node")
        .arg(&script)
        .arg(dir.join("node_modules"))
        .arg(&manifest_path)
        // SwiftShader for Dawn alone: the wgpu tests keep the system's driver.
        .env("VK_ICD_FILENAMES", dir.join("swiftshader/vk_swiftshader_icd.json"))
        .env("VK_DRIVER_FILES", dir.join("swiftshader/vk_swiftshader_icd.json"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report: serde_json::Value = match stdout.lines().rev().find_map(|l| serde_json::from_str(l).ok()) {
        Some(r) => r,
        None => panic!("the Dawn compile script gave no report (status {}):\n{stdout}\n{}", run.status, String::from_utf8_lossy(&run.stderr)),
    };
    if let Some(e) = report.get("error") {
        if run.status.code() == Some(2) {
            return skip_or_fail(&format!("{e}"));
        }
    }
    // The whole report (each kernel's messages and times) beside the installation.
    let _ = std::fs::write(dir.join("compile-report.json"), serde_json::to_vec_pretty(&report).unwrap_or_default());
    let results = report["results"].as_array().expect("a results list");
    assert_eq!(results.len(), kernels.len(), "Dawn compiled {} of {} kernels", results.len(), kernels.len());
    let failures: Vec<String> = results
        .iter()
        .filter(|r| r["ok"] != true)
        .map(|r| {
            let file = Path::new(r["file"].as_str().unwrap_or("?")).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let messages: Vec<String> = r["messages"].as_array().into_iter().flatten().map(|m| format!("{} at {}:{}: {}", m["type"], m["line"], m["column"], m["message"])).collect();
            format!("{file}: {}; pipeline: {}", messages.join("; "), r["pipelineError"])
        })
        .collect();
    assert!(failures.is_empty() && run.status.success(), "Dawn ({}) rejects {} of {} kernels (status {}; device lost: {}):\n{}", report["adapter"], failures.len(), kernels.len(), run.status, report["lost"], failures.join("\n"));
    eprintln!("Dawn ({}) compiled all {} kernels with no error or warning", report["adapter"], kernels.len());
}
