#!/usr/bin/env bash
# Issue 58: the Keccak probe at f62ca5a+ (Keccak trees through the resident tree builder; the u64
# multiply with vec2<u32> Keccak lanes by default, and with u64 lanes) against the probe at
# 0630730 (the dedicated Keccak tree kernels; lanes by the multiply), alternated: W, B, W, B.
# Binaries built with scripts/pack-gpu.sh's flags, gzipped into .gpu/ as keccak_probe.gz and
# keccak_probe_b.gz; run from the repository root as `bash .gpu/run23.sh` with carry [".gpu"].
for f in .gpu/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
for b in keccak_probe keccak_probe_b; do gunzip -c .gpu/$b.gz > /tmp/$b; chmod +x /tmp/$b; done
t() { echo "== $*" ; timeout 240 "$@" 2>&1; echo "rc=$?"; }
nvidia-smi --query-gpu=name,clocks.sm,pstate --format=csv > $OUT/gpu.txt 2>&1
{ t /tmp/keccak_probe 22 3; t /tmp/keccak_probe_b 22 3; t /tmp/keccak_probe 22 3; t /tmp/keccak_probe_b 22 3; } > $OUT/keccak.txt 2>&1
echo finished > $OUT/done.txt
