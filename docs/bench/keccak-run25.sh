#!/usr/bin/env bash
# Issue 58: keccak_probe (WHIR_LOG 24) with a second of GPU proofs before each timed GPU proof,
# against WhirProver on Plonky3's vectorized Keccak MMCS in the same process. Binary built with
# scripts/pack-gpu.sh's flags, gzipped into .gpu/keccak_probe.gz; run from the repository root as
# `bash .gpu/run25.sh` with carry [".gpu"].
for f in .gpu/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
gunzip -c .gpu/keccak_probe.gz > /tmp/keccak_probe; chmod +x /tmp/keccak_probe
{ echo "== keccak_probe 20 3"; timeout 400 /tmp/keccak_probe 20 3 2>&1; echo "rc=$?"; } > $OUT/keccak.txt 2>&1
echo finished > $OUT/done.txt
