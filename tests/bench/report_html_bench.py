#!/usr/bin/python3
"""Benchmark: report.html of a 2,000-step, 8-rank synth run, its size and its load in Chromium.

Generates `truffld-synth --ranks 8 --hosts 2 --layers 4 --steps 2000 --abnormal-fraction 0.1`,
merges and diagnoses it offline, then measures
  * report.html's size (target <= 5 MB),
  * headless Chromium opening it: wall time of `chromium --headless --screenshot` (start-up,
    parse, script, layout and paint; median of 3, target < 5 s), the same for an empty page
    (start-up alone),
    and the page's own time to the end of its script (performance.now(), from --dump-dom).
Prints one JSON object; exits 1 when a target is missed, 77 when chromium is not installed.
Usage: report_html_bench.py --diag BIN --synth BIN --merge BIN --work DIR [--steps N --ranks N]"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

SKIP = 77


def browser_cmd(binary, profile):
    return [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            "--disable-background-networking", "--user-data-dir=" + profile]


def timed(cmd):
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode(errors="replace")[-2000:]))
    return wall, p.stdout.decode("utf-8", "replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for a in ("diag", "synth", "merge", "work"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--max-mb", type=float, default=5.0)
    ap.add_argument("--max-load-s", type=float, default=5.0)
    a = ap.parse_args()
    binary = os.environ.get("TRUFFLD_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        print("SKIPPED: chromium not installed (tools/bootstrap.sh installs it)")
        return SKIP
    shutil.rmtree(a.work, ignore_errors=True)
    synth, merged, diag = (os.path.join(a.work, x) for x in ("synth", "merged", "diag"))
    timed([a.synth, "--ranks", str(a.ranks), "--hosts", "2", "--layers", "4", "--steps", str(a.steps),
           "--abnormal-fraction", "0.1", "--zstd", "-q", "--out", synth])
    timed([a.merge] + sorted(glob.glob(os.path.join(synth, "truffld-*.jsonl.zst"))) +
          ["-o", merged, "--no-trace-json", "-q"])
    diag_s, _ = timed([a.diag, merged, "-o", diag, "--labels", os.path.join(synth, "labels.jsonl"),
                       "--llm", "off", "-q"])
    shutil.rmtree(synth, ignore_errors=True)  # gigabytes: keep only the diagnosis
    shutil.rmtree(merged, ignore_errors=True)
    report = os.path.join(diag, "report.html")
    size = os.path.getsize(report)
    with open(os.path.join(diag, "diagnosis.jsonl")) as f:
        labels = [json.loads(line)["label"] for line in f]
    os.remove(os.path.join(diag, "diagnosis.jsonl"))
    empty = os.path.join(a.work, "empty.html")
    with open(empty, "w") as f:
        f.write("<!DOCTYPE html><html><body></body></html>\n")
    base = browser_cmd(binary, os.path.join(a.work, "profile"))
    shot = ["--screenshot=" + os.path.join(a.work, "report.png"), "--window-size=1280,2400"]
    timed(base + ["--dump-dom", "file://" + empty])  # warm the profile and the page cache
    # Interleaved, three of each; the median counts.
    empty_runs, load_runs = [], []
    for _ in range(3):
        empty_runs.append(timed(base + shot + ["file://" + empty])[0])
        load_runs.append(timed(base + shot + ["file://" + report])[0])
    empty_s, load_s = sorted(empty_runs)[1], sorted(load_runs)[1]
    _, dom = timed(base + ["--dump-dom", "file://" + report])
    ready = re.search(r'data-report-ready="([0-9]+)"', dom)
    result = {
        "steps": a.steps, "ranks": a.ranks, "units": len(labels),
        "abnormal_units": labels.count("abnormal"),
        "insufficient_evidence": labels.count("insufficient_evidence"),
        "cards": dom.count("<section class=\"card"),
        "report_bytes": size, "report_mb": round(size / 1e6, 2),
        "chromium_load_s": round(load_s, 2), "chromium_load_runs_s": [round(x, 2) for x in load_runs],
        "chromium_empty_page_s": round(empty_s, 2),
        "page_script_done_ms": int(ready.group(1)) if ready else None,
        "diagnose_s": round(diag_s, 2),
        "targets": {"report_mb_max": a.max_mb, "load_s_max": a.max_load_s},
    }
    print(json.dumps(result, indent=1))
    ok = size <= a.max_mb * 1e6 and load_s < a.max_load_s and ready is not None
    if not ok:
        print("target missed", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
