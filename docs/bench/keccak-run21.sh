#!/usr/bin/env bash
# Issue 58: the resident WHIR over Plonky3's Keccak configuration (keccak_probe, WHIR_LOG 24),
# and the A/B of the change that made the Merkle code hash-generic (W = 88c0104 or later;
# B = ec48ee8): proof bytes of `whir prove` compared, plain and hiding benches alternated.
# Binaries built with scripts/pack-gpu.sh's flags, gzipped into .gpu/ as whir.gz, whir_b.gz,
# keccak_probe.gz; run from the repository root as `bash .gpu/run21.sh` with carry [".gpu"].
for f in .gpu/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
for b in whir whir_b keccak_probe; do gunzip -c .gpu/$b.gz > /tmp/$b; chmod +x /tmp/$b; done
W=/tmp/whir; B=/tmp/whir_b
t() { echo "== $*" ; timeout 200 "$@" 2>&1; echo "rc=$?"; }
nvidia-smi --query-gpu=name,clocks.sm,pstate --format=csv > $OUT/gpu.txt 2>&1
{ t /tmp/keccak_probe 22 3; } > $OUT/keccak.txt 2>&1
{ for a in "--vars 22 --fold 4 --seed 7" "--vars 20 --fold 2 --seed 3 --field koalabear --leaf-width 24" "--vars 20 --fold 4 --seed 5 --zk --mask-seed 9"; do
    echo "== prove $a"
    $W prove $a --backend gpu --out /tmp/a.whir --force > /dev/null 2>&1; ra=$?
    $B prove $a --backend gpu --out /tmp/b.whir --force > /dev/null 2>&1; rb=$?
    echo "rc $ra $rb"; cmp /tmp/a.whir /tmp/b.whir && echo "identical ($(stat -c %s /tmp/a.whir) bytes)"
  done; } > $OUT/bytes.txt 2>&1
P="bench --vars 24 --fold 2,4 --rate 1 --pow-bits 22 --reps 3 --gpu-warmup-ms 1000 --no-pieces"
{ t $W $P; t $B $P; t $W $P; t $B $P; } > $OUT/plain.txt 2>&1
Z="bench --zk --vars 24 --fold 4 --rate 1 --pow-bits 22 --reps 3 --gpu-warmup-ms 1000 --no-pieces"
{ t $W $Z; t $B $Z; } > $OUT/zk.txt 2>&1
echo finished > $OUT/done.txt
