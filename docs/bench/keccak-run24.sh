#!/usr/bin/env bash
# Issue 58: `whir bench --hash keccak` (WHIR over Plonky3's Keccak configuration: WhirProver on its
# CPU pieces beside the resident prover, each proof compared and verified) at becc4f7+, and the
# Poseidon2 plain prover at the same parameters in the same call. Binary built with
# scripts/pack-gpu.sh's flags, gzipped into .gpu/whir.gz; run from the repository root as
# `bash .gpu/run24.sh` with carry [".gpu"].
for f in .gpu/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
gunzip -c .gpu/whir.gz > /tmp/whir; chmod +x /tmp/whir
t() { echo "== $*" ; timeout 240 "$@" 2>&1; echo "rc=$?"; }
nvidia-smi --query-gpu=name,clocks.sm,pstate --format=csv > $OUT/gpu.txt 2>&1
{ t /tmp/whir bench --hash keccak --vars 20,24 --fold 4 --rate 1 --pow-bits 22 --reps 3 --gpu-warmup-ms 1000
  t /tmp/whir bench --hash keccak --vars 24 --fold 2 --rate 1 --pow-bits 20 --reps 3 --gpu-warmup-ms 1000
  t /tmp/whir bench --vars 24 --fold 4 --rate 1 --pow-bits 22 --reps 3 --gpu-warmup-ms 1000 --no-pieces; } > $OUT/bench.txt 2>&1
echo finished > $OUT/done.txt
