#!/usr/bin/env python3
"""Sums a timeline written by `WHIR_TIMELINE=FILE whir ...` (a build with `--features timeline`).

For each proof (a `pool job` span) it splits the proof's wall time by the span that was
innermost at each moment on its thread (exclusive time): our spans (steps, GPU waits,
submissions, bind groups, uploads, readback copies) and wgpu-core's (`Queue::submit`,
`Device::maintain`, ...). Printed: the mean per proof of each, over the proofs that started
after the first `--skip` of them, so time that grows with the proofs in flight stands out
when two runs (say --concurrency 1 and 8) are set side by side.

    python3 scripts/timeline_summary.py trace.json [--skip N] [--take N] [--last N] [--top K]
"""

import argparse
import collections
import json
import sys


def label(event):
    name = event.get("name", "?")
    args = event.get("args") or {}
    if name == "step" and "step" in args:
        return "step " + str(args["step"]).strip("\"")
    return name


def load(path):
    """The trace's events: one JSON object a line, as tracing-chrome writes them. A trace cut
    short (the process killed) may end in a half-written line, which is left out."""
    events = []
    with open(path) as f:
        for line in f:
            line = line.strip().rstrip(",")
            if not line.startswith("{"):
                continue
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                print(f"{path}: left out an unreadable line ({line[:60]}...)", file=sys.stderr)
    return events


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--skip", type=int, default=0, help="proofs (in start order) left out first")
    ap.add_argument("--last", type=int, default=0, help="only the last N proofs (a bench level's timed ones)")
    ap.add_argument("--take", type=int, default=0, help="only the first N proofs after --skip")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    # Each thread's events are in order in the file; a stable sort by time keeps that order
    # where two share a timestamp.
    events = [e for e in load(a.trace) if e.get("ph") in ("B", "E")]
    events.sort(key=lambda e: e["ts"])
    stacks = collections.defaultdict(list)  # tid -> [(label, start, child_time, job)]
    jobs = []  # (start, end, tid, {label: exclusive us})
    open_job = {}
    for e in events:
        tid, ts = e.get("tid"), e["ts"]
        stack = stacks[tid]
        if e["ph"] == "B":
            name = label(e)
            stack.append([name, ts, 0.0])
            if name == "pool job":
                open_job[tid] = (ts, collections.Counter())
            continue
        if not stack:
            continue
        name, start, children = stack.pop()
        inclusive = ts - start
        if stack:
            stack[-1][2] += inclusive
        if tid in open_job:
            open_job[tid][1][name] += inclusive - children
        if name == "pool job" and tid in open_job:
            s, parts = open_job.pop(tid)
            jobs.append((s, ts, tid, parts))
    jobs.sort()
    kept = jobs[a.skip:]
    if a.take:
        kept = kept[:a.take]
    if a.last:
        kept = kept[-a.last:]
    if not kept:
        sys.exit(f"no `pool job` spans after skipping {a.skip} (found {len(jobs)}); was WHIR_TIMELINE set on a --features timeline build?")
    n = len(kept)
    wall = (max(j[1] for j in kept) - min(j[0] for j in kept)) / 1e3
    total = collections.Counter()
    for _, _, _, parts in kept:
        total.update(parts)
    latency = sum(j[1] - j[0] for j in kept) / n / 1e3
    threads = len({j[2] for j in kept})
    print(f"{a.trace}: {n} proofs on {threads} threads, {wall:.1f} ms from first start to last end ({n / wall * 1e3:.1f} proofs/s), mean latency {latency:.2f} ms")
    print(f"{'span (exclusive)':<52} {'ms/proof':>9} {'share':>7}")
    for name, us in total.most_common(a.top):
        print(f"{name:<52} {us / n / 1e3:9.3f} {us / n / 1e3 / latency:7.1%}")


if __name__ == "__main__":
    main()
