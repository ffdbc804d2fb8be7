#!/usr/bin/env bash
# Packs the release binaries (built with AVX-512 for the H200 host's CPU baseline) and the Vulkan
# loader packages into .gpu/ for a run on a remote GPU machine. Usage: scripts/pack-gpu.sh
# On the remote machine: for f in .gpu/*.deb; do dpkg -x $f /; done; ldconfig; then .gpu/<bin>.
#
# The CPU-feature flags apply to the target only: with an explicit --target, cargo builds build
# scripts and proc macros for the host without RUSTFLAGS, so this works on build machines that
# lack AVX-512 themselves (the flags would otherwise reach e.g. proc-macro2's build script and
# kill it with SIGILL).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${TARGET:-x86_64-unknown-linux-gnu}
export RUSTFLAGS="-C target-feature=+avx2,+avx512f,+avx512bw,+avx512dq,+avx512vl,+avx512cd"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/avx512}
cargo build --release --target "$TARGET" --workspace --bins --benches --examples
BIN="$CARGO_TARGET_DIR/$TARGET/release"
mkdir -p .gpu
rm -f .gpu/whir .gpu/*_bench .gpu/*_probe .gpu/prove_loop .gpu/stark .gpu/whir_worker
strip -o .gpu/whir "$BIN/whir"
strip -o .gpu/transfer_probe "$BIN/examples/transfer_probe"
strip -o .gpu/latency_probe "$BIN/examples/latency_probe"
strip -o .gpu/grind_probe "$BIN/examples/grind_probe"
strip -o .gpu/prove_loop "$BIN/examples/prove_loop"
strip -o .gpu/stark "$BIN/examples/stark"
strip -o .gpu/concurrency_probe "$BIN/examples/concurrency_probe"
for b in ntt poseidon2 merkle grind; do
    # The newest bench executable of that name (cargo leaves older hashes behind).
    f=$(ls -t "$BIN"/deps/"$b"-* | grep -E "/$b-[0-9a-f]{16}$" | head -1)
    strip -o ".gpu/${b}_bench" "$f"
done
# The Vulkan loader, and the GL dispatch libraries NVIDIA's Vulkan driver loads (without them
# wgpu finds no adapter: "vulkan drivers/libraries could not be loaded").
if ! ls .gpu/libvulkan1_*.deb >/dev/null 2>&1; then
    cp ../shared/vulkan-loader/*.deb .gpu/ 2>/dev/null || (cd .gpu && apt-get download libvulkan1)
fi
if ! ls .gpu/libglvnd0_*.deb >/dev/null 2>&1; then
    (cd .gpu && apt-get download libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
du -sh .gpu
