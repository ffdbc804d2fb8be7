#!/usr/bin/env bash
# The Keccak probe at 3a43faa's Keccak-f (rounds in a loop), with Plonky3's WHIR prover over its
# Keccak configuration on the GPU pieces against its own pieces (n = 24, fold 4):
# examples/keccak_probe built with scripts/pack-gpu.sh's flags and gzipped as
# .gpu/keccak_probe.gz; run from the repository root as `bash .gpu/run20.sh` with carry [".gpu"].
for f in .gpu/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
gunzip -c .gpu/keccak_probe.gz > /tmp/keccak_probe; chmod +x /tmp/keccak_probe
t() { echo "== $*" ; timeout 240 "$@" 2>&1; echo "rc=$?"; }
nvidia-smi --query-gpu=name,clocks.sm,pstate --format=csv > $OUT/gpu.txt 2>&1
{ t /tmp/keccak_probe 22 3; } > $OUT/keccak.txt 2>&1
echo finished > $OUT/done.txt
