#!/usr/bin/env bash
# Runs the benchmark set behind BENCHMARKS.md on a GPU machine, from the .gpu/ folder that
# scripts/pack-gpu.sh fills (carry it along). Outputs go to $OUT (default ./bench-out).
# Usage: scripts/gpu-benches.sh [benches|grid|all|levers|throughput|confirm|ab|ab2|challengers|zk]   (each part fits one 10-minute call)
# `levers` measures the throughput levers against their other forms: Poseidon2 over 16 lanes for
# latency-bound steps (WHIR_TRANSCRIPT_LANES, WHIR_LANE_LEVEL_MAX_NODES; LANE_NODES sets the
# level bound tried, default 4096) and contexts on 4 queues of one device, of the graphics or
# the compute-only family (WHIR_COMPUTE_ONLY_QUEUES). `throughput` is BENCHMARKS.md's throughput
# table; `confirm` alternates lone proofs with the lane permutations on and off. `ab` alternates
# .gpu/whir_before (a build of the commit before a refactor, packed by hand) with .gpu/whir on
# issue 49's shapes, twice (`ab`: n = 24 and 20; `ab2`: the zkVM tables and KoalaBear^8, and the
# proof files compared); `challengers` times the PCS over
# Plonky3's DuplexChallenger and over GpuChallenger. `zk` times Plonky3's hiding PCS over
# its CPU pieces and over ours (whir bench --zk), BabyBear^4 at 100 bits and KoalaBear^8 at 128.
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
    # A chain of 64 dependent dispatches: one thread a state, or 16 lanes a state (the profile's
    # GPU time per dispatch sets WHIR_LANE_LEVEL_MAX_NODES).
    for states in 1 64 256 1024 4096 16384; do
        for kernel in thread lanes; do
            PROBE_PROFILE=1 PROBE_KERNEL=$kernel timeout 60 .gpu/concurrency_probe chain "$states" 64 100
        done
    done > "$OUT/probes.txt" 2>&1
    # Four threads' chains on one context, on four contexts, on four queues of one device (the
    # graphics family, then a compute-only family).
    for spread in "" "PROBE_CONTEXTS=4" "PROBE_QUEUES=4 WHIR_COMPUTE_ONLY_QUEUES=0" "PROBE_QUEUES=4 WHIR_COMPUTE_ONLY_QUEUES=1"; do
        echo "== $spread"
        env PROBE_THREADS=4 $spread timeout 60 .gpu/concurrency_probe chain 64 64 100
    done >> "$OUT/probes.txt" 2>&1
    # The same proof with the lane permutations off and on: the files must be byte-identical.
    for lanes in 0 1; do
        WHIR_TRANSCRIPT_LANES=$lanes WHIR_LANE_LEVEL_MAX_NODES=$((lanes * ${LANE_NODES:-4096})) timeout 60 .gpu/whir prove \
            --vars 22 --fold 4 --pow-bits 22 --seed 7 --out "/tmp/lanes$lanes.proof" --force
    done > "$OUT/lanes_identity.txt" 2>&1
    cmp /tmp/lanes0.proof /tmp/lanes1.proof >> "$OUT/lanes_identity.txt" 2>&1 && echo "proof files byte-identical" >> "$OUT/lanes_identity.txt"
    # Throughput with compute-only queues, then lanes off and on alternated (one stream and 8
    # in flight), each with a kernel profile of one proof.
    WHIR_COMPUTE_ONLY_QUEUES=1 timeout 120 .gpu/whir bench --vars 20 --fold 4 --rate 1 --pow-bits 22 --concurrency 1,4,8 --queues 4 \
        --proofs 96 --plonky3-parallel 1 --json "$OUT/queues_compute.json" > "$OUT/throughput.txt" 2>&1
    for run in 1 2; do
        for lanes in 0 1; do
            echo "== lanes $lanes run $run" >> "$OUT/throughput.txt"
            WHIR_TRANSCRIPT_LANES=$lanes WHIR_LANE_LEVEL_MAX_NODES=$((lanes * ${LANE_NODES:-4096})) timeout 100 .gpu/whir bench \
                --vars 20,24 --fold 4 --rate 1 --pow-bits 22 --concurrency 1,8 --proofs 64 --plonky3-parallel 1 \
                --json "$OUT/lanes${lanes}_run$run.json" >> "$OUT/throughput.txt" 2>&1
        done
    done
fi
if [[ $part == throughput ]]; then
    # Issue 28's shapes: proofs per second with 1-8 in flight on the one-queue context and on
    # queues of one device (compute-only family), beside Plonky3's best on the host's cores.
    timeout 200 .gpu/whir bench --vars 24 --fold 4 --rate 1 --pow-bits 22 --concurrency 1,2,4,8 --queues 4 --proofs 64 \
        --plonky3-parallel 1,2,4 --json "$OUT/throughput_n24.json" > "$OUT/throughput.txt" 2>&1
    timeout 120 .gpu/whir bench --vars 24 --fold 4 --rate 1 --pow-bits 22 --concurrency 1,2 --queues 8 --proofs 64 \
        --plonky3-parallel 4 --json "$OUT/throughput_n24_q8.json" >> "$OUT/throughput.txt" 2>&1
    timeout 120 .gpu/whir bench --vars 20 --fold 4 --rate 1 --pow-bits 22 --concurrency 1,2,4,8 --queues 8 --proofs 128 \
        --plonky3-parallel 1,2,4 --json "$OUT/throughput_n20.json" >> "$OUT/throughput.txt" 2>&1
    timeout 120 .gpu/whir bench --vars 22 --fold 2 --rate 1 --pow-bits 22 --concurrency 1,2,4 --queues 4 --proofs 64 \
        --plonky3-parallel 1,2,4 --json "$OUT/throughput_n22.json" >> "$OUT/throughput.txt" 2>&1
    # One proof at a time with the defaults, and the same proof with the lane permutations off:
    # byte-identical files.
    timeout 90 .gpu/whir bench --vars 20,24 --fold 4 --rate 1 --pow-bits 22 --reps 5 --no-pieces --json "$OUT/lone.json" > "$OUT/lone.txt" 2>&1
    for lanes in 1 0; do
        WHIR_TRANSCRIPT_LANES=$lanes WHIR_LANE_LEVEL_MAX_NODES=$((lanes * 4096)) timeout 60 .gpu/whir prove \
            --vars 22 --fold 4 --pow-bits 22 --seed 7 --out "/tmp/lanes$lanes.proof" --force
    done >> "$OUT/lone.txt" 2>&1
    cmp /tmp/lanes0.proof /tmp/lanes1.proof >> "$OUT/lone.txt" 2>&1 && echo "proof files byte-identical" >> "$OUT/lone.txt"
fi
if [[ $part == confirm ]]; then
    # Lone proofs with the defaults against the lane permutations off, alternated twice; then
    # n = 22 fold 2 on 8 queues and n = 24 on 2 queues (latency against rate).
    for run in 1 2; do
        for lanes in 1 0; do
            echo "== lanes $lanes run $run"
            WHIR_TRANSCRIPT_LANES=$lanes WHIR_LANE_LEVEL_MAX_NODES=$((lanes * 4096)) timeout 90 .gpu/whir bench \
                --vars 20,24 --fold 4 --rate 1 --pow-bits 22 --reps 5 --no-pieces --json "$OUT/lone_lanes${lanes}_run$run.json"
        done
    done > "$OUT/lone_ab.txt" 2>&1
    timeout 120 .gpu/whir bench --vars 22 --fold 2 --rate 1 --pow-bits 22 --concurrency 1,2,4 --queues 8 --proofs 64 \
        --plonky3-parallel 4 --json "$OUT/queues8_n22.json" > "$OUT/queues.txt" 2>&1
    timeout 120 .gpu/whir bench --vars 24 --fold 4 --rate 1 --pow-bits 22 --concurrency 1,2 --queues 2 --proofs 64 \
        --plonky3-parallel 4 --json "$OUT/queues2_n24.json" >> "$OUT/queues.txt" 2>&1
fi
if [[ $part == ab ]]; then
    # A refactor before and after: n = 24 fold 1, 2 and 4 and n = 20 fold 4 (BabyBear^4); the
    # binaries alternated, twice (the zkVM tables and KoalaBear^8: `ab2`).
    for run in 1 2; do
        for bin in whir_before whir; do
            echo "== $bin run $run"
            timeout 100 .gpu/$bin bench --vars 24 --fold 1,2,4 --rate 1 --pow-bits 22 --reps 3 --no-pieces --json "$OUT/ab_${bin}_n24_run$run.json"
            timeout 40 .gpu/$bin bench --vars 20 --fold 4 --rate 1 --pow-bits 22 --reps 5 --no-pieces --json "$OUT/ab_${bin}_n20_run$run.json"
        done
    done > "$OUT/ab.txt" 2>&1
fi
if [[ $part == ab2 ]]; then
    # The second half of `ab` (one 10-minute call each): the zkVM tables and KoalaBear^8 at fold
    # 4 alternated twice, then the proof files compared.
    for run in 1 2; do
        for bin in whir_before whir; do
            echo "== $bin run $run"
            timeout 60 .gpu/$bin bench --tables zkvm --fold 4 --rate 1 --pow-bits 22 --reps 3 --json "$OUT/ab_${bin}_zkvm_run$run.json"
            timeout 60 .gpu/$bin bench --config koalabear8-128 --vars 24 --fold 4 --rate 1 --reps 3 --no-pieces --json "$OUT/ab_${bin}_kb8_run$run.json"
        done
    done > "$OUT/ab.txt" 2>&1
    for config in babybear4 koalabear8-128 koalabear5-128; do
        for bin in whir_before whir; do
            timeout 60 .gpu/$bin prove --config $config --vars 22 --fold 4 --seed 7 --out "/tmp/$bin.proof" --force
        done >> "$OUT/ab.txt" 2>&1
        cmp /tmp/whir_before.proof /tmp/whir.proof >> "$OUT/ab.txt" 2>&1 && echo "$config: proof files byte-identical" >> "$OUT/ab.txt"
    done
    # Codewords over one binding (16 MiB bindings: encoded by column blocks into row chunks),
    # timed in WebGPU's default limits at n = 24, then their proof files compared.
    for bin in whir_before whir; do
        echo "== $bin, WHIR_LIMITS=webgpu"
        WHIR_LIMITS=webgpu timeout 60 .gpu/$bin bench --vars 24 --fold 4 --rate 1 --pow-bits 22 --reps 3 --no-pieces --json "$OUT/ab_${bin}_webgpu.json"
    done >> "$OUT/ab.txt" 2>&1
    for bin in whir_before whir; do
        WHIR_LIMITS=webgpu:16777216 timeout 60 .gpu/$bin prove --vars 22 --fold 4 --seed 7 --out "/tmp/$bin.proof" --force
    done >> "$OUT/ab.txt" 2>&1
    cmp /tmp/whir_before.proof /tmp/whir.proof >> "$OUT/ab.txt" 2>&1 && echo "babybear4 over 16 MiB bindings: proof files byte-identical" >> "$OUT/ab.txt"
fi
if [[ $part == challengers ]]; then
    # What each challenger costs: the PCS over Plonky3's own duplex (every transcript step on
    # the host) beside the GPU's, zkVM tables at fold 2 (PoW 20).
    for challenger in plonky3 gpu; do
        echo "== challenger $challenger"
        timeout 90 .gpu/whir bench --tables zkvm --fold 2 --rate 1 --reps 3 --challenger $challenger --json "$OUT/challenger_$challenger.json"
    done > "$OUT/challengers.txt" 2>&1
fi
if [[ $part == zk ]]; then
    # Plonky3's HidingWhirPcs over its pieces and over ours, n = 20 and 24, folds 2 and 4,
    # rate 1; then KoalaBear^8 at 128 bits, fold 4 (issue 50's shapes).
    timeout 240 .gpu/whir bench --zk --vars 20,24 --fold 2,4 --rate 1 --pow-bits 22 --reps 3 --gpu-warmup-ms 2000 --json "$OUT/zk_babybear4.json" > "$OUT/zk.txt" 2>&1
    timeout 200 .gpu/whir bench --zk --config koalabear8-128 --vars 20,24 --fold 4 --rate 1 --reps 3 --gpu-warmup-ms 2000 --json "$OUT/zk_koalabear8.json" >> "$OUT/zk.txt" 2>&1
fi
grep -hE 'time:|^\| |dispatches/s|^==|GPU time|identical' "$OUT"/*.txt | tail -100
# The device returns at most 8 files: more go back as one archive.
if (( $(find "$OUT" -type f | wc -l) > 8 )); then
    (cd "$OUT" && tar cf all.tar --exclude all.tar . && find . -type f ! -name all.tar -delete)
fi
