#!/usr/bin/env bash
# The crates as another project gets them: `cargo package --workspace` packages whir-verifier,
# whir-gpu, whir-prover, whir-cli and the umbrella whir-wgpu, and builds each from its package
# against the others' packages; then .ci/consumer, a crate outside the workspace, depends on
# those packages (patched in for crates.io's) and proves and verifies a table and a
# polynomial through the public API, on the workspace's locked dependency versions.
set -euo pipefail
cd "$(dirname "$0")/.."
# Cargo takes a registry package of a given version as never changing: it extracts the
# packages' temporary registry into $CARGO_HOME/registry/src once per version, and keeps what it
# built from them. Both, left by an earlier run (the same version from older sources), would be
# verified in place of this tree's packages: they go first (our crates only).
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/whir-{verifier,gpu,prover,cli,wgpu}-*
cargo clean --quiet -p whir-verifier -p whir-gpu -p whir-prover -p whir-cli -p whir-wgpu
cargo package --workspace --allow-dirty
cp Cargo.lock .ci/consumer/Cargo.lock
# In the workspace's target directory, where the packages' verification builds left the
# dependencies the consumer shares with them.
CARGO_TARGET_DIR=target cargo run --manifest-path .ci/consumer/Cargo.toml
