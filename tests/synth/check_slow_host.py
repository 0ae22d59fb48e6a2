"""truffld-synth --slow-host H:FACTOR: every kernel on host H takes FACTOR times longer in every
step, the other hosts' dumps stay byte-identical, synth_summary.json and ledger.jsonl (one
slow_host entry per rank of the host, spanning its steps, labelling nothing) record it, and bad
values are usage errors.
Usage: check_slow_host.py --synth BIN --work DIR"""
import argparse
import filecmp
import glob
import json
import os
import shutil
import subprocess
import sys


def kernel_time(path):
    total = {"compute": 0, "nccl": 0}
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r.get("type") == "KERNEL":
                total["nccl" if "nccl" in r["name"].lower() else "compute"] += r["gpu_end"] - r["gpu_start"]
    return total


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--synth", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    base = [a.synth, "--ranks", "4", "--hosts", "2", "--layers", "2", "--steps", "6", "--faults", "none", "-q"]
    subprocess.run(base + ["--out", os.path.join(a.work, "plain")], check=True)
    subprocess.run(base + ["--out", os.path.join(a.work, "slow"), "--slow-host", "1:1.5"], check=True)
    for f in glob.glob(os.path.join(a.work, "plain", "truffld-node0-*.jsonl")):
        same = filecmp.cmp(f, os.path.join(a.work, "slow", os.path.basename(f)), shallow=False)
        check(same, "%s unchanged on the healthy host" % os.path.basename(f))
    for f in sorted(glob.glob(os.path.join(a.work, "plain", "truffld-node1-*.jsonl"))):
        p, s = kernel_time(f), kernel_time(os.path.join(a.work, "slow", os.path.basename(f)))
        ratio = s["compute"] / p["compute"]
        check(1.4 < ratio < 1.6, "%s: compute kernels %.3fx longer" % (os.path.basename(f), ratio))
    with open(os.path.join(a.work, "slow", "synth_summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    check(summary["slow_host"] == {"host": "node1", "index": 1, "factor": 1.5}, "synth_summary.json: %s" % summary["slow_host"])
    with open(os.path.join(a.work, "slow", "ledger.jsonl"), encoding="utf-8") as f:
        ledger = [json.loads(line) for line in f]
    check([(e["class"], e["host"], e["rank"], e["intensity"], e["sufficient"], e["first_step"], e["last_step"])
           for e in ledger] == [("slow_host", "node1", r, 1.5, False, 0, 5) for r in (2, 3)],
          "ledger.jsonl: one slow_host entry per rank of node1: %s" % ledger)
    check(all(0 < e["start"] < e["end"] for e in ledger), "each spans its rank's run")
    with open(os.path.join(a.work, "plain", "ledger.jsonl"), encoding="utf-8") as f:
        check(f.read() == "", "no slow host, no ledger entry")
    for bad in ("2:1.5", "1", "1:0.5", "x:2", "1:abc"):
        r = subprocess.run(base + ["--out", os.path.join(a.work, "bad"), "--slow-host", bad],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
        check(r.returncode == 2 and "--slow-host" in r.stderr, "--slow-host %s is a usage error" % bad)


if __name__ == "__main__":
    main()
