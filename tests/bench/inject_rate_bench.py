#!/usr/bin/python3
"""Sustained-rate and burst benchmark of libcupti_injector.so's writer (ctest label bench).

Runs tests/inject's nvtx_app under NVTX injection with the default settings:
  * burst: one thread issues N records (push/pop pairs) as fast as it can, then exits;
  * rate R: one thread issues R records/s for S seconds, spinning between them (the
    application keeps one core busy), for each R of --rates (millions of records/s).
For each run it reports what the process issued, what STATS says was written and dropped,
the drop rate, the writer's sustained throughput (records written per second of the run) and
the writer thread's CPU time per record. The dumps go to a temporary folder on the same file
system as TMPDIR and are removed after each run.

Usage: inject_rate_bench.py --app PATH --injector PATH [--seconds 10] [--rates 0.5,1,2,4]
                            [--burst 65536] [--repeat 1] [--check]
--check exits 1 when the burst or a rate of at most 1 M records/s dropped anything.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def run_once(app, injector, argv):
    out_dir = tempfile.mkdtemp(prefix="truffld-rate-")
    try:
        env = dict(os.environ, NVTX_INJECTION64_PATH=injector, TRUFFLD_OUTPUT_DIR=out_dir)
        t0 = time.monotonic()
        proc = subprocess.run([app] + argv, env=env, capture_output=True, text=True, check=False)
        wall = time.monotonic() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"{app} {' '.join(argv)} exited {proc.returncode}: {proc.stderr}")
        info = {"wall_s": wall}
        for line in proc.stdout.splitlines():
            key, _, value = line.partition(" ")
            if key in ("issued", "other_threads_cpu_s"):
                info[key] = float(value)
        dumps = [f for f in os.listdir(out_dir) if f.endswith(".jsonl")]
        if len(dumps) != 1:
            raise RuntimeError(f"expected one dump in {out_dir}, found {dumps}")
        with open(os.path.join(out_dir, dumps[0]), "rb") as f:
            f.seek(max(0, os.path.getsize(f.name) - 65536))
            stats = json.loads(f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])
        if stats.get("type") != "STATS":
            raise RuntimeError("the dump does not end with STATS")
        kinds = ("NVTX_PUSH", "NVTX_POP")
        info["written"] = sum(stats["records_written"][k] for k in kinds)
        info["dropped"] = sum(stats["records_dropped"][k] for k in kinds)
        info["unbalanced"] = stats.get("unbalanced_closes", 0)
        return info
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app", required=True)
    ap.add_argument("--injector", required=True)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rates", default="0.5,1,2,4", help="millions of records per second")
    ap.add_argument("--burst", type=int, default=65536, help="records in the one-thread burst")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()

    failed = False
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    print(f"{'run':>14} {'issued':>11} {'written':>11} {'dropped':>10} {'drop %':>7} "
          f"{'writer rec/s':>13} {'writer ns/rec':>13}")
    for _ in range(args.repeat):
        b = run_once(args.app, args.injector, ["threads", "1", str(args.burst // 2)])
        issued = args.burst
        print(f"{'burst':>14} {issued:>11} {b['written']:>11} {b['dropped']:>10} "
              f"{100.0 * b['dropped'] / issued:>7.3f} {'-':>13} {'-':>13}")
        failed |= b["dropped"] > 0 or b["unbalanced"] > 0
        for rate in (float(r) for r in args.rates.split(",")):
            r = run_once(args.app, args.injector, ["rate", str(rate * 1e6), str(args.seconds)])
            issued = r["issued"]
            cpu = r.get("other_threads_cpu_s", 0.0)
            ns = 1e9 * cpu / r["written"] if r["written"] else 0.0
            print(f"{f'{rate:g} M/s x {args.seconds:g} s':>14} {issued:>11.0f} {r['written']:>11} "
                  f"{r['dropped']:>10} {100.0 * r['dropped'] / issued:>7.3f} "
                  f"{r['written'] / args.seconds:>13.0f} {ns:>13.0f}")
            failed |= rate <= 1.0 and (r["dropped"] > 0 or r["unbalanced"] > 0)
    print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
