#!/usr/bin/env bash
# The crates as another project gets them: `cargo package --workspace` packages whir-verifier,
# whir-gpu, whir-prover, whir-cli and the umbrella whir-wgpu, and builds each from its package
# against the others' packages; then .ci/consumer, a crate outside the workspace, depends on
# those packages (patched in for crates.io's) and proves and verifies a table and a
# polynomial through the public API, on the workspace's locked dependency versions.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo package --workspace --allow-dirty
cp Cargo.lock .ci/consumer/Cargo.lock
# In the workspace's target directory, where the packages' verification builds left the
# dependencies the consumer shares with them.
CARGO_TARGET_DIR=target cargo run --manifest-path .ci/consumer/Cargo.toml
