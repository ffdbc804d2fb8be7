#!/usr/bin/env bash
# Issue 58, session 3: `whir bench --hash keccak --zk` (the hiding PCS over Keccak beside
# HidingWhirPcs) and `whir prove --hash keccak` (plain and --zk) on the GPU beside the CPU
# (Plonky3's WhirProver / HidingWhirPcs over the Keccak configuration on the host's cores), and
# the A/B of this session's type-level changes on the Poseidon2 paths (W = HEAD, B = 50c0301):
# `whir prove` bytes compared (plain, KoalaBear width-24 leaves, hiding with --mask-seed), plain
# and hiding benches alternated. Binaries built with scripts/pack-gpu.sh's flags, gzipped into
# .gpu/ as whir.gz and whir_b.gz; run from the repository root as `bash .gpu/run26.sh` with
# carry [".gpu"].
for f in .gpu/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
for b in whir whir_b; do gunzip -c .gpu/$b.gz > /tmp/$b; chmod +x /tmp/$b; done
W=/tmp/whir; B=/tmp/whir_b
t() { echo "== $*" ; timeout 240 "$@" 2>&1; echo "rc=$?"; }
nvidia-smi --query-gpu=name,clocks.sm,pstate --format=csv > $OUT/gpu.txt 2>&1
{ for a in "--vars 22 --fold 4 --seed 7" "--vars 20 --fold 2 --seed 3 --field koalabear --leaf-width 24" "--vars 20 --fold 4 --seed 5 --zk --mask-seed 9" "--vars 20 --fold 4 --seed 5 --zk --mask-seed 9 --extension 8 --security 128"; do
    echo "== prove $a"
    $W prove $a --backend gpu --out /tmp/a.whir --force > /dev/null 2>&1; ra=$?
    $B prove $a --backend gpu --out /tmp/b.whir --force > /dev/null 2>&1; rb=$?
    echo "rc $ra $rb"; cmp /tmp/a.whir /tmp/b.whir && echo "identical ($(stat -c %s /tmp/a.whir) bytes)"
  done; } > $OUT/bytes.txt 2>&1
Z="bench --zk --vars 24 --fold 4 --rate 1 --pow-bits 22 --reps 3 --gpu-warmup-ms 1000 --no-pieces"
{ t $W $Z; t $B $Z; t $W $Z; t $B $Z; } > $OUT/zk.txt 2>&1
P="bench --vars 24 --fold 4 --rate 1 --pow-bits 22 --reps 3 --gpu-warmup-ms 1000 --no-pieces"
{ t $W $P; t $B $P; } > $OUT/plain.txt 2>&1
KB="bench --hash keccak --vars 24 --fold 4 --rate 1 --pow-bits 22 --reps 3 --gpu-warmup-ms 1000"
{ t $W $KB --zk; t $W $KB; } > $OUT/keccak_bench.txt 2>&1
# Keccak from the command line: one proof a process, so the GPU is kept busy by a proof just
# before each timed one (the benches above are the reference figures).
K="prove --hash keccak --vars 24 --fold 4 --rate 1 --pow-bits 22 --json --force"
{ t $W $K --backend gpu --out /tmp/k0.whir; for i in 1 2 3; do t $W $K --backend gpu --out /tmp/k$i.whir; done
  t $W $K --backend cpu --out /tmp/kc.whir
  t $W verify /tmp/k1.whir --vars 24 --fold 4 --pow-bits 22; t $W verify /tmp/kc.whir --vars 24 --fold 4 --pow-bits 22; } > $OUT/keccak_prove.txt 2>&1
Z="prove --hash keccak --zk --vars 24 --fold 4 --rate 1 --pow-bits 22 --json --force"
{ t $W $Z --backend gpu --out /tmp/z0.whir; for i in 1 2 3; do t $W $Z --backend gpu --out /tmp/z$i.whir; done
  t $W $Z --backend cpu --out /tmp/zc.whir
  t $W verify /tmp/z1.whir --zk --vars 24 --fold 4 --pow-bits 22; } > $OUT/keccak_zk.txt 2>&1
echo finished > $OUT/done.txt
