"""truffld-fleet benchmark: 32 synthetic replicas (TP2, 64 ranks on 32 hosts), wall time of the
whole command in-process (no Dask), in-process sharded by time window (--window-steps 6), on a
LocalCluster of 1 and of 2 workers (wall and the children's CPU time), and the bytes of
step features that travelled per rank-step; then the 10,000-GPU estimate from the per-shard
figures. Each timing starts from an empty output directory (no shard skipped).
Usage: fleet_bench.py --synth BIN --merge BIN --diagnose BIN --work DIR [--replicas 32] [--steps 24]
Prints a Markdown table (BENCHMARKS.md, "Fleet")."""
import argparse
import glob
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLEET = os.path.join(ROOT, "tools", "truffld-fleet")
sys.path.insert(0, os.path.join(ROOT, "tools", "fleet"))
import reduce  # noqa: E402


def timed(cmd):
    """(wall s, user+sys CPU s of the command and its children, stdout)."""
    t0, c0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.monotonic() - t0, c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime, r.stdout


def main():
    ap = argparse.ArgumentParser()
    for k in ("synth", "merge", "diagnose", "work"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--replicas", type=int, default=32)
    ap.add_argument("--steps", type=int, default=24)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    dumps = os.path.join(a.work, "dumps")
    subprocess.run([a.synth, "--out", dumps, "--ranks", str(2 * a.replicas), "--hosts", str(a.replicas), "--layers",
                    "4", "--steps", str(a.steps), "--faults", "none", "--slow-host", "5:1.25", "-q"], check=True)
    raw = sum(os.path.getsize(f) for f in glob.glob(os.path.join(dumps, "truffld-*.jsonl")))
    with open(os.path.join(dumps, "synth_summary.json"), encoding="utf-8") as f:
        records = json.load(f)["records"]
    base = [FLEET, dumps, "--merge", a.merge, "--diagnose", a.diagnose, "--tool-threads", "1"]
    rows = []
    for name, extra in (("in-process", ["--in-process"]),
                        ("in-process, --window-steps 6", ["--in-process", "--window-steps", "6"]),
                        ("LocalCluster, 1 worker", ["--local-workers", "1"]),
                        ("LocalCluster, 2 workers", ["--local-workers", "2"])):
        out = os.path.join(a.work, re.sub(r"\W+", "-", name))
        secs, cpu, stdout = timed(base + ["-o", out] + extra)
        m = re.search(r"(\d+) rank-steps, (\d+) bytes of features per rank-step; [\d.]+ s \(shards ([\d.]+) s\)",
                      stdout)
        rows.append((name, secs, cpu, float(m.group(3)), int(m.group(1)), int(m.group(2)),
                     "slow_replica: replica 5" in stdout))
    feats = []
    for f in glob.glob(os.path.join(a.work, "in-process", "replica-*", "step_features.jsonl")):
        with open(f, encoding="utf-8") as fh:
            feats += [json.loads(line) for line in fh]
    t0 = time.monotonic()
    reduce.reduce_fleet(feats)
    reduce_s = time.monotonic() - t0
    rank_steps, per = rows[0][4], rows[0][5]
    shard_s = rows[0][3] / a.replicas
    print("| run (%d replicas TP2, %d steps, %.0f MB of dumps) | wall s, whole command | CPU s (user+sys, children) | "
          "s, first submission to last result | rank-steps | feature bytes per rank-step | slow replica 5 found |" % (
              a.replicas, a.steps, raw / 1e6))
    print("|---|---|---|---|---|---|---|")
    for name, secs, cpu, shards, n, b, found in rows:
        print("| %s | %.1f | %.1f | %.1f | %d | %d | %s |" % (name, secs, cpu, shards, n, b, "yes" if found else "no"))
    print()
    print("per shard (in-process): %.2f s for %d rank-steps, %d records; %.2f s per million records; raw dumps %.0f "
          "bytes per rank-step, features %d (%.0fx less travels)" % (
              shard_s, rank_steps // a.replicas, records // a.replicas, shard_s / (records / a.replicas) * 1e6,
              raw / rank_steps, per, raw / rank_steps / per))
    print("fleet reduce alone (Python, in the client): %.2f s for %d rank-steps (%.0f us per rank-step)" % (
        reduce_s, len(feats), reduce_s / len(feats) * 1e6))


if __name__ == "__main__":
    main()
