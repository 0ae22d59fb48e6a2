#!/usr/bin/env python3
"""truffld-diagnose holds OUTDIR/.truffld.lock while it writes: with the lock held by another
process (here this test, with flock), a run exits 3 naming the lock and its holder and writes
nothing; with --wait-lock it waits and then writes. Two runs on one OUTDIR could otherwise mix
one run's diagnosis.jsonl with the other's report and stats, both exiting 0.

Usage: output_lock_cli_test.py --diag BIN --synth BIN --work DIR"""
import argparse
import fcntl
import os
import subprocess
import sys

from cli_test_util import run_diag, synth_workdir


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--diag", required=True)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    trees, _ = synth_workdir(a.synth, a.work)
    out = os.path.join(a.work, "out-locked")
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(out):
        if name != ".truffld.lock":
            os.remove(os.path.join(out, name))
    holder = os.open(os.path.join(out, ".truffld.lock"), os.O_RDWR | os.O_CREAT, 0o640)
    os.ftruncate(holder, 0)
    os.write(holder, b"test-holder, pid %d\n" % os.getpid())
    fcntl.flock(holder, fcntl.LOCK_EX)
    args = [a.diag, trees, "-o", out, "--llm", "off", "--no-html", "-q"]
    p = run_diag(args)
    if p.returncode != 3 or ".truffld.lock" not in p.stderr or "test-holder" not in p.stderr:
        sys.exit(f"lock held: expected exit 3 naming the lock and holder, got {p.returncode}:\n{p.stderr}")
    if os.path.exists(os.path.join(out, "diagnosis.jsonl")):
        sys.exit("lock held: diagnosis.jsonl written anyway")
    waiter = subprocess.Popen(args + ["--wait-lock"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        waiter.wait(timeout=1)  # it must still be waiting while the lock is held (not a timing check)
        sys.exit(f"--wait-lock: exited {waiter.returncode} while the lock was held")
    except subprocess.TimeoutExpired:
        pass
    fcntl.flock(holder, fcntl.LOCK_UN)
    os.close(holder)
    if waiter.wait(timeout=240) != 0 or not os.path.exists(os.path.join(out, "diagnosis.jsonl")):
        sys.exit(f"--wait-lock: exit {waiter.returncode}:\n{waiter.stderr.read().decode()}")
    print("output lock: a held lock gives exit 3 naming it; --wait-lock waits, then writes")


if __name__ == "__main__":
    main()
