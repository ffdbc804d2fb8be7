#!/usr/bin/env python3
"""Sums a timeline written by `WHIR_TIMELINE=FILE whir bench --zk ...` (a build with `--features
timeline`) per hiding step: for the last N hiding openings (each ends with its `base case`
step), each `hiding step` span's time per opening, and the exclusive time of the spans inside it
on its thread (GPU waits, wgpu-core's work, and the step's own host work under its own name).
Spans cost time: a traced opening is slower than an untimed one; read the shares, not the sums.

    python3 scripts/hiding_timeline.py trace.json[.gz] [N]
"""
import collections, json, sys
path = sys.argv[1]; last = int(sys.argv[2]) if len(sys.argv) > 2 else 2
ev = []
import gzip
op = gzip.open if path.endswith(".gz") else open
with op(path, "rt") as f:
    for line in f:
        line = line.strip().rstrip(",")
        if line.startswith("{"):
            try: ev.append(json.loads(line))
            except json.JSONDecodeError: pass
ev = [e for e in ev if e.get("ph") in ("B", "E")]
ev.sort(key=lambda e: e["ts"])
def label(e):
    n = e.get("name", "?"); a = e.get("args") or {}
    if n == "hiding step": return "hiding step " + str(a.get("step", "?")).strip('"')
    return n
stacks = collections.defaultdict(list)
steps = []  # (start, end, name, Counter of exclusive child time)
for e in ev:
    tid, ts = e.get("tid"), e["ts"]; st = stacks[tid]
    if e["ph"] == "B":
        st.append([label(e), ts, 0.0, collections.Counter()]); continue
    if not st: continue
    name, start, child, parts = st.pop()
    incl = ts - start
    parts[name] += incl - child
    if st:
        st[-1][2] += incl
        # roll exclusive parts up to the enclosing hiding step
        if not name.startswith("hiding step"):
            st[-1][3].update(parts)
    if name.startswith("hiding step"):
        steps.append((start, ts, name, parts))
steps.sort()
# openings end at a base case step
ends = [i for i, s in enumerate(steps) if s[2] == "hiding step base case"]
if not ends: sys.exit("no hiding steps")
first = ends[-last - 1] + 1 if len(ends) > last else 0
chosen = steps[first:ends[-1] + 1]
n = last
tot = collections.Counter(); incl = collections.Counter()
for s, e, name, parts in chosen:
    incl[name] += e - s
    for k, v in parts.items(): tot[(name, k)] += v
wall = sum(incl.values()) / n / 1e3
print(f"{n} openings, hiding steps sum {wall:.2f} ms per opening")
for name, us in sorted(incl.items(), key=lambda x: -x[1]):
    print(f"{name:<32} {us/n/1e3:8.2f} ms")
    for (st, k), v in sorted(tot.items(), key=lambda x: -x[1]):
        if st == name and v / n / 1e3 >= 0.05:
            print(f"    {k:<44} {v/n/1e3:8.2f}")
