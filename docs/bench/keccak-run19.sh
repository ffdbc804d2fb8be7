#!/usr/bin/env bash
# Keccak-f's rounds unrolled (the committed wgsl/keccak/f_*.wgsl) against a loop over a private
# table of the round constants (scripts/gen_keccak_wgsl.py --loop): examples/keccak_probe built
# both ways with scripts/pack-gpu.sh's flags, gzipped into .gpu/ as keccak_probe.gz and
# keccak_probe_loop.gz, alternated twice; run from the repository root as `bash .gpu/run19.sh`
# with carry [".gpu"].
for f in .gpu/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
for b in keccak_probe keccak_probe_loop; do gunzip -c .gpu/$b.gz > /tmp/$b; chmod +x /tmp/$b; done
t() { echo "== $*" ; timeout 200 "$@" 2>&1; echo "rc=$?"; }
nvidia-smi --query-gpu=name,clocks.sm,pstate --format=csv > $OUT/gpu.txt 2>&1
{ t /tmp/keccak_probe 22 5; t /tmp/keccak_probe_loop 22 5; t /tmp/keccak_probe 22 5; t /tmp/keccak_probe_loop 22 5; } > $OUT/keccak.txt 2>&1
echo finished > $OUT/done.txt
