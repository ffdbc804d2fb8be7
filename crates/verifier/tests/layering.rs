//! The verifier side links no GPU code: its normal dependency tree has neither wgpu nor naga,
//! nor the prover and GPU crates of this workspace.

#[test]
fn the_verifier_links_no_gpu_code() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let out = std::process::Command::new(cargo)
        .args(["tree", "--offline", "--manifest-path", manifest, "-p", "whir-verifier", "-e", "normal", "--prefix", "none"])
        .output()
        .expect("run cargo tree");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.lines().any(|l| l.starts_with("p3-whir ")), "not the tree expected:\n{tree}");
    for crate_name in ["wgpu", "wgpu-core", "wgpu-hal", "naga", "whir-gpu", "whir-prover"] {
        let found: Vec<&str> = tree.lines().filter(|l| l.split(' ').next() == Some(crate_name)).collect();
        assert!(found.is_empty(), "whir-verifier depends on {crate_name}: {found:?}");
    }
}
