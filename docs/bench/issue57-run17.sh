#!/usr/bin/env bash
# Issue 57 refactor A/B: W = the backend restructure (f05255f or later), B = 363acf4, each built
# with scripts/pack-gpu.sh's flags and gzipped as .gpu/whir.gz and .gpu/whir_b.gz; run from the
# repository root as `bash .gpu/run17.sh` with carry [".gpu"]. Proof files compared, then alternated
# W, B, W, B: plain n = 24 folds 1, 4 (the issue's judge); hiding n = 24 fold 4; the zkVM tables over Plonky3's duplex.
for f in .gpu/*.deb; do dpkg -x $f / >/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
for b in whir whir_b; do gunzip -c .gpu/$b.gz > /tmp/$b; chmod +x /tmp/$b; done
W=/tmp/whir; B=/tmp/whir_b
t() { echo "== $*" ; timeout 120 "$@" 2>&1; echo "rc=$?"; }
nvidia-smi --query-gpu=name,clocks.sm,pstate --format=csv > $OUT/gpu.txt 2>&1
{ for a in "--vars 22 --fold 4 --seed 7" "--vars 22 --fold 2 --seed 7 --config koalabear8-128" "--vars 20 --fold 4 --seed 3 --field koalabear" "--vars 20 --fold 1 --seed 4 --extension 5" "--vars 20 --fold 4 --seed 5 --zk --mask-seed 9"; do
    echo "== prove $a"
    $W prove $a --backend gpu --out /tmp/a.whir --force > /dev/null 2>&1; ra=$?
    $B prove $a --backend gpu --out /tmp/b.whir --force > /dev/null 2>&1; rb=$?
    echo "rc $ra $rb"; cmp /tmp/a.whir /tmp/b.whir && echo "identical ($(stat -c %s /tmp/a.whir) bytes)"
  done; } > $OUT/bytes.txt 2>&1
P="bench --vars 24 --fold 1,4 --rate 1 --pow-bits 22 --reps 3 --gpu-warmup-ms 1000 --no-pieces"
{ t $W $P; t $B $P; t $W $P; t $B $P; } > $OUT/plain.txt 2>&1
Z="bench --zk --vars 24 --fold 4 --rate 1 --pow-bits 22 --reps 3 --gpu-warmup-ms 1000 --no-pieces"
{ t $W $Z; t $B $Z; t $W $Z; t $B $Z; } > $OUT/zk.txt 2>&1
D="bench --tables zkvm --fold 2 --pow-bits 22 --challenger plonky3 --reps 2 --gpu-warmup-ms 1000 --no-pieces"
{ t $W $D; t $B $D; t $W $D; t $B $D; } > $OUT/duplex.txt 2>&1
echo finished > $OUT/done.txt
