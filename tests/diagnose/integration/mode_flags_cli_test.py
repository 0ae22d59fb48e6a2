#!/usr/bin/env python3
"""truffld-diagnose's flags and its --mode: --help lists the legacy mixture modes' flags under
their own heading (not among the default mode's), and a flag given with a mode it does not apply
to is a usage error (exit 2, "truffld-diagnose: " naming the flag and the mode) instead of being
silently ignored (`--mode peer --reference DIR` ran in peer mode, exit 0).

A flag that applies passes the check: the run then stops at the missing input (exit 1).

Usage: mode_flags_cli_test.py --diag BIN --work DIR"""
import argparse
import os
import re
import shutil
import subprocess
import sys

from cli_test_util import run_diag

LEGACY_HEADING = "Legacy mixture modes (--mode pooled|reference|within-step):"
LEGACY = ["--reference", "--k-min", "--k-max", "--covariance", "--reg-covar", "--central-mass", "--top1",
          "--split-ranks", "--split-regimes", "--rho", "--tail-alpha", "--q", "--lambda", "--top-m",
          "--min-score", "--min-instances", "--trim"]
PEER = ["--false-alarm-rate", "--single-ratio-device", "--single-ratio-host", "--single-ratio-transfer",
        "--lone-min-share", "--min-impact-share", "--export-tests"]

# (arguments, flag named, mode named): each must exit 2.
BAD = [(["--mode", "peer", "--reference", "healthy/"], "--reference", "peer"),
       (["--rho", "paper"], "--rho", "peer"),
       (["--mode", "peer", "--q", "0.3"], "--q", "peer"),
       (["--top-m", "3"], "--top-m", "peer"),
       (["--no-split-regimes"], "--split-regimes", "peer"),
       (["--mode", "pooled", "--false-alarm-rate", "0.05"], "--false-alarm-rate", "pooled"),
       (["--mode", "within-step", "--single-ratio-host", "2"], "--single-ratio-host", "within-step"),
       (["--reference", "healthy/", "--lone-min-share", "0.1"], "--lone-min-share", "reference"),
       (["--mode", "reference", "--reference", "healthy/", "--min-impact-share", "0"], "--min-impact-share",
        "reference"),
       (["--mode", "pooled", "--export-tests", "t.csv"], "--export-tests", "pooled"),
       (["--mode", "pooled", "--reference", "healthy/"], "--reference", "pooled"),
       (["--mode", "within-step", "--trim", "0.1"], "--trim", "within-step")]

GOOD = [[], ["--mode", "peer", "--false-alarm-rate", "0.05", "--export-tests", "t.csv", "--threads", "1"],
        ["--reference", "healthy/", "--k-max", "3", "--rho", "paper"],  # --reference implies reference mode
        ["--mode", "reference", "--reference", "healthy/", "--q", "0.3"],
        ["--mode", "pooled", "--trim", "0.1", "--split-ranks", "--export-features", "f.csv"],
        ["--mode", "within-step", "--top-m", "3", "--no-split-regimes", "--llm", "off", "--no-html"]]


def help_sections(diag):
    """{flag: heading of the --help section that lists it}."""
    p = subprocess.run([diag, "--help"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"--help should exit 0 (exit {p.returncode}):\n{p.stderr}")
    where, heading = {}, None
    for line in p.stdout.splitlines():
        if re.match(r"^\S.*:$", line):
            heading = line
        for flag in re.findall(r"^  (-[-\w,!]+)", line):
            for name in flag.split(","):
                where.setdefault(name, heading)
    return where


def check_help(diag):
    where = help_sections(diag)
    for flag in LEGACY:
        if where.get(flag) != LEGACY_HEADING:
            sys.exit(f"--help lists {flag} under {where.get(flag)!r}, not {LEGACY_HEADING!r}")
    for flag in PEER:
        if where.get(flag) in (None, "Options:", LEGACY_HEADING):
            sys.exit(f"--help lists {flag} under {where.get(flag)!r}, not the peer detector's heading")
    for flag in ["--out", "--mode", "--llm", "--labels", "--no-html"]:
        if where.get(flag) in (None, LEGACY_HEADING):
            sys.exit(f"--help lists {flag} under {where.get(flag)!r}")


def run(diag, work, args):
    cmd = [diag, os.path.join(work, "missing-trees.jsonl"), "-o", os.path.join(work, "out")] + args
    return run_diag(cmd, timeout=60, cwd=work)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--diag", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    a.diag, a.work = os.path.abspath(a.diag), os.path.abspath(a.work)
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    check_help(a.diag)
    for args, flag, mode in BAD:
        p = run(a.diag, a.work, args)
        first = p.stderr.splitlines()[0] if p.stderr else ""
        if p.returncode != 2 or not first.startswith("truffld-diagnose: ") or flag not in first \
                or f"--mode {mode}" not in first:
            sys.exit(f"{args}: should exit 2 naming {flag} and --mode {mode} (exit {p.returncode}):\n{p.stderr}")
    for args in GOOD:
        p = run(a.diag, a.work, args)
        if p.returncode != 1 or "missing-trees.jsonl" not in p.stderr:
            sys.exit(f"{args}: flags that apply to the mode should pass, then the missing input exits 1 "
                     f"(exit {p.returncode}):\n{p.stderr}")
    print(f"mode flags: --help headings, {len(BAD)} misplaced flags refused, {len(GOOD)} combinations accepted")


if __name__ == "__main__":
    main()
