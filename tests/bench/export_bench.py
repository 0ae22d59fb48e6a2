#!/usr/bin/python3
"""Benchmark of the run database: truffld-export's time and database size per million events,
and truffld-merge --sqlite's time over the plain merge, against the merge's own time on the same
input (the target: the database in at most 2x the merge's time).

Generates a synthetic run with `truffld-synth --events N`, merges it (timed, default outputs and
--no-trace-json), exports it (timed), merges it with --sqlite (timed), and prints one Markdown
row for BENCHMARKS.md and each round's ratios. Runs are interleaved (merge, merge
--no-trace-json, export, merge --sqlite) round by round; medians of wall time and of CPU time
(user + sys, all threads): on a shared machine the wall-time ratio moves with the load, the
CPU-time ratio much less. "--sqlite extra" is merge --sqlite's time less the plain merge's of
the same round.
Usage: export_bench.py --synth BIN --merge BIN --export BIN [--events N] [--rounds R] [--work DIR]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import time


def timed(args):
    """(wall seconds, CPU seconds: user + sys of the process and its threads)."""
    t = time.perf_counter()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit("%s exited %d" % (" ".join(args), p.returncode))
    return time.perf_counter() - t, ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--synth", required=True)
    ap.add_argument("--merge", required=True)
    ap.add_argument("--export", required=True)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="/var/tmp/truffld-export-bench")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    dumps, merged, merged2, merged3 = (os.path.join(a.work, d)
                                       for d in ("dumps", "merged", "merged-notrace", "merged-sqlite"))
    db = os.path.join(a.work, "run.sqlite")
    subprocess.run([a.synth, "--events", str(a.events), "--seed", "1", "-q", "--out", dumps], check=True)
    merge_s, merge_nt_s, export_s, sqlite_s = [], [], [], []
    for r in range(a.rounds):
        merge_s.append(timed([a.merge, dumps, "-o", merged, "-q"]))
        merge_nt_s.append(timed([a.merge, dumps, "-o", merged2, "-q", "--no-trace-json"]))
        export_s.append(timed([a.export, merged, "-o", db, "-q"]))
        shutil.rmtree(merged3, ignore_errors=True)
        sqlite_s.append(timed([a.merge, dumps, "-o", merged3, "-q", "--sqlite", os.path.join(merged3, "run.sqlite")]))
        (m, mc), (e, ec), (q, qc) = merge_s[-1], export_s[-1], sqlite_s[-1]
        print("round %d, load %.2f: merge %.2f s (%.2f CPU), export %.2fx (%.2fx CPU), --sqlite extra %.2fx "
              "(%.2fx CPU)" % (r + 1, os.getloadavg()[0], m, mc, e / m, ec / mc, (q - m) / m, (qc - mc) / mc))
    with open(os.path.join(merged, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    events = sum(summary["total"]["events_read"].values())  # what the merge read, every kind
    trees = os.path.getsize(os.path.join(merged, "trees.jsonl"))
    size = os.path.getsize(db)
    med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
    m, mn, e = med(merge_s, 0), med(merge_nt_s, 0), med(export_s, 0)
    mc, ec = med(merge_s, 1), med(export_s, 1)
    q, qc = med(sqlite_s, 0), med(sqlite_s, 1)
    per_m = 1e6 / events
    print("events %d, trees.jsonl %.1f MB, rounds %d, load %.2f" % (events, trees / 1e6, a.rounds, os.getloadavg()[0]))
    print("| events | merge s (CPU s) | merge --no-trace-json s | export s (CPU s) | export / merge, wall (CPU) "
          "| merge --sqlite s (CPU s) | --sqlite extra / merge, wall (CPU) | export s per M events | DB MB "
          "| DB MB per M events |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("| %s | %.2f (%.2f) | %.2f | %.2f (%.2f) | %.2fx (%.2fx) | %.2f (%.2f) | %.2fx (%.2fx) | %.2f | %.1f | %.1f |" % (
        format(events, ","), m, mc, mn, e, ec, e / m, ec / mc, q, qc, (q - m) / m, (qc - mc) / mc, e * per_m,
        size / 1e6, size / 1e6 * per_m))

if __name__ == "__main__":
    main()
