#!/usr/bin/env bash
# Runs the benchmark set behind BENCHMARKS.md on a GPU machine, from the .gpu/ folder that
# scripts/pack-gpu.sh fills (carry it along). Outputs go to $OUT (default ./bench-out).
# Usage: scripts/gpu-benches.sh [benches|grid|all]   (each part fits one 10-minute call)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
for f in .gpu/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
part=${1:-all}
if [[ $part == benches || $part == all ]]; then
    { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; .gpu/whir info; } > "$OUT/info.txt" 2>&1
    timeout 60 .gpu/transfer_probe 64 256 >> "$OUT/info.txt" 2>&1
    { timeout 100 .gpu/poseidon2_bench --bench --noplot; timeout 150 .gpu/merkle_bench --bench --noplot; } > "$OUT/p2_merkle.txt" 2>&1
    WHIR_BENCH_BITS=12,14,16,20,24 timeout 120 .gpu/grind_bench --bench --noplot > "$OUT/grind.txt" 2>&1
    WHIR_BENCH_SKIP_PROFILE=1 WHIR_BENCH_LOGS=10,12,14,16,18,20,22,24 timeout 250 .gpu/ntt_bench --bench --noplot > "$OUT/ntt.txt" 2>&1
fi
if [[ $part == grid || $part == all ]]; then
    timeout 150 .gpu/whir bench --vars 20,22 --fold 1,2,4 --rate 1,2 --reps 3 --json "$OUT/grid2022.json" --plot "$OUT/grid2022.svg" > "$OUT/grid2022.txt" 2>&1
    timeout 60 .gpu/whir bench --vars 24 --fold 4 --rate 1 --pow-bits 22 --reps 3 --json "$OUT/grid_pow22.json" > "$OUT/grid_pow22.txt" 2>&1
    timeout 300 .gpu/whir bench --vars 24 --fold 1,2 --rate 1,2 --reps 3 --json "$OUT/grid24.json" > "$OUT/grid24.txt" 2>&1
fi
grep -hE 'time:|^\| ' "$OUT"/*.txt | tail -80
