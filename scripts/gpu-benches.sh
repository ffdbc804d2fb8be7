#!/usr/bin/env bash
# Runs the benchmark set behind BENCHMARKS.md on a GPU machine, from the .gpu/ folder that
# scripts/pack-gpu.sh fills (carry it along). Outputs go to $OUT (default ./bench-out).
# Usage: scripts/gpu-benches.sh [benches|grid|all|levers]   (each part fits one 10-minute call)
# `levers` measures the throughput options that stay off until measured: Poseidon2 over 16
# lanes for latency-bound steps (WHIR_TRANSCRIPT_LANES, WHIR_LANE_LEVEL_MAX_NODES; LANE_NODES
# sets the level bound tried, default 1024) and contexts on 4 queues of one device (--queues).
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
if [[ $part == levers ]]; then
    # A chain of 64 dependent dispatches: one thread a state, or 16 lanes a state.
    for states in 1 16 256 4096; do
        for kernel in thread lanes; do
            PROBE_PROFILE=1 PROBE_KERNEL=$kernel timeout 60 .gpu/concurrency_probe chain "$states" 64 100
        done
    done > "$OUT/lanes_probe.txt" 2>&1
    # Four threads' chains on one context, on four contexts, on four queues of one device.
    for spread in "" "PROBE_CONTEXTS=4" "PROBE_QUEUES=4"; do
        env PROBE_THREADS=4 $spread timeout 60 .gpu/concurrency_probe chain 64 64 100
    done > "$OUT/queues_probe.txt" 2>&1
    timeout 200 .gpu/whir bench --vars 20 --fold 4 --rate 1 --pow-bits 22 --concurrency 1,4,8 --queues 4 --proofs 96 \
        --plonky3-parallel 1 --queue-profile --json "$OUT/queues_n20.json" > "$OUT/queues_n20.txt" 2>&1
    # Lane permutations off and on, alternated, each with a kernel profile.
    for run in 1 2; do
        for lanes in 0 1; do
            WHIR_TRANSCRIPT_LANES=$lanes WHIR_LANE_LEVEL_MAX_NODES=$((lanes * ${LANE_NODES:-1024})) timeout 90 .gpu/whir bench \
                --vars 20,24 --fold 4 --rate 1 --pow-bits 22 --reps 5 --no-pieces --kernel-profile \
                --json "$OUT/lanes${lanes}_run$run.json" > "$OUT/lanes${lanes}_run$run.txt" 2>&1
        done
    done
fi
grep -hE 'time:|^\| |dispatches/s' "$OUT"/*.txt | tail -80
