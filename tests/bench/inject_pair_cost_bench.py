#!/usr/bin/python3
"""Whole-process CPU per NVTX push+pop pair, application and writer on one core (label bench).

Runs tests/inject's nvtx_app (`bursts N B US`: one thread, N push/pop pairs named
"aten::mm, op_id = 42" in bursts of B pairs with a sleep of US microseconds after each) pinned
to one CPU with `taskset -c CPU`, so the tracer's writer thread competes with the application
for that core and every nanosecond the writer spends formatting and writing is charged to the
process. The sleeps stand for the application's idle time: they let the writer drain the ring
(a burst of 10,000 pairs passes an eighth of a default ring, the writer's wake-up mark, and the
ring holds 6.5 bursts); without them one thread in a tight loop fills its ring faster than a
writer sharing its core drains it, and the run measures the cheaper drop path. Each round runs the app untraced and traced (NVTX_INJECTION64_PATH, dump in a
temporary folder), in an order that alternates round by round; the CPU time (user + system) of
each run comes from wait4's rusage. The paired difference (traced - untraced) / N is the cost
that tracing adds per pair, with the median over rounds and a bootstrap 95 % interval
(paired_ratio.bootstrap_median_ci). The process start-up (loading and starting the tracer,
META) is included and spread over the N pairs; `--pairs` makes it small.
A traced run whose STATS counts drops is reported (the pair cost is then not comparable), and each
traced run's STATS.dump_io (direct, page_cache, zstd; and why direct I/O stopped part-way).

With --compare PATH a second injector (B) runs in the same rounds, the three settings taking
turns in an order that rotates each round; the report adds B's cost and the paired B - A.
--dump-dir puts the dumps in a folder of that file system (default: the system's temporary
folder); --compare-dump-dir puts B's there instead (B is A's injector when --compare is not
given), so that one injector on two file systems (tmpfs /dev/shm against a disk) is an A/B pair
and the kernel's share of the cost, which depends on the file system, shows apart.
--compare-env VAR=VALUE (repeatable) sets a variable for B's runs only (B = A's injector unless
--compare is given): one injector with a switch on and off, e.g. TRUFFLD_DIRECT_IO=0.

Usage: inject_pair_cost_bench.py --app PATH --injector PATH [--compare PATH]
                                 [--dump-dir DIR] [--compare-dump-dir DIR]
                                 [--compare-env VAR=VALUE ...]
                                 [--pairs 1000000] [--rounds 10]
                                 [--burst 10000] [--sleep-us 20000] [--cpu 0] [--json FILE]
                                 [--max-ns NS]
--max-ns exits 1 when the median added cost per pair is above NS (the done-when target).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired_ratio import bootstrap_median_ci  # noqa: E402


def read_stats(out_dir):
    """(written, dropped, how) of the one dump in out_dir: its NVTX_PUSH+NVTX_POP records
    written and dropped, and how they reached the file (STATS.dump_io, with
    direct_io_stopped when direct I/O stopped part-way: a run that mixes modes)."""
    dumps = [f for f in os.listdir(out_dir) if f.endswith(".jsonl")]
    if len(dumps) != 1:
        raise RuntimeError(f"expected one dump in {out_dir}, found {dumps}")
    path = os.path.join(out_dir, dumps[0])
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - 65536))
        stats = json.loads(f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])
    if stats.get("type") != "STATS":
        raise RuntimeError("the dump does not end with STATS")
    kinds = ("NVTX_PUSH", "NVTX_POP")
    how = stats.get("dump_io", "?")
    if stats.get("direct_io_stopped"):
        how += f" (direct stopped: {stats['direct_io_stopped']})"
    return (sum(stats["records_written"][k] for k in kinds),
            sum(stats["records_dropped"][k] for k in kinds), how)


def run_once(app, injector, args, traced, dump_dir=None, extra_env=None):
    """CPU seconds (user + system) of one run, and its (written, dropped) when traced; the dump
    goes to a new folder in dump_dir (None: the system's temporary folder); extra_env: more
    variables for this run."""
    out_dir = tempfile.mkdtemp(prefix="truffld-pair-", dir=dump_dir)
    try:
        env = dict(os.environ, TRUFFLD_OUTPUT_DIR=out_dir)
        env.update(extra_env or {})
        env.pop("NVTX_INJECTION64_PATH", None)
        env.pop("CUDA_INJECTION64_PATH", None)  # NVTX only: no CUPTI in either setting
        if traced:
            env["NVTX_INJECTION64_PATH"] = injector
        proc = subprocess.Popen(["taskset", "-c", str(args.cpu), app, "bursts", str(args.pairs),
                                 str(args.burst), str(args.sleep_us)],
                                env=env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(f"{app} exited {proc.returncode}")
        seconds = usage.ru_utime + usage.ru_stime
        return seconds, (read_stats(out_dir) if traced else None)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def summary(label, diffs):
    """Prints and returns the median of diffs (ns per pair) with its bootstrap interval."""
    med, low, high = bootstrap_median_ci(diffs)
    print(f"{label}: median {med:.1f} ns/pair [{low:.1f}, {high:.1f}] (95 % bootstrap), "
          f"{len(diffs)} rounds")
    return {"median": med, "ci95": [low, high]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app", required=True)
    ap.add_argument("--injector", required=True)
    ap.add_argument("--compare", help="a second injector, measured in the same rounds (A/B)")
    ap.add_argument("--pairs", type=int, default=1000000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--burst", type=int, default=10000, help="pairs a burst")
    ap.add_argument("--sleep-us", type=int, default=20000, help="sleep after each burst")
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--dump-dir", help="folder for the dumps (its file system is measured too)")
    ap.add_argument("--compare-dump-dir", help="B's dumps go here (B = A's injector unless --compare)")
    ap.add_argument("--compare-env", action="append", default=[], metavar="VAR=VALUE",
                    help="a variable set for B's runs only (B = A's injector unless --compare)")
    ap.add_argument("--json", help="write the per-round figures here")
    ap.add_argument("--max-ns", type=float, help="fail when the median added ns/pair exceeds this")
    args = ap.parse_args()

    if (args.compare_dump_dir or args.compare_env) and not args.compare:
        args.compare = args.injector
    b_env = {}
    for item in args.compare_env:
        var, sep, value = item.partition("=")
        if not sep or not var:
            ap.error(f"--compare-env '{item}' is not VAR=VALUE")
        b_env[var] = value
    envs = [None, None, b_env]
    settings = [None, args.injector] + ([args.compare] if args.compare else [])
    dump_dirs = [args.dump_dir, args.dump_dir, args.compare_dump_dir or args.dump_dir]
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} CPUs")
    ns = {i: [] for i in range(len(settings))}
    dropped = 0
    for rnd in range(args.rounds):
        order = [(rnd + k) % len(settings) for k in range(len(settings))]  # rotates each round
        line = []
        for i in order:
            seconds, stats = run_once(args.app, settings[i], args, settings[i] is not None,
                                      dump_dirs[i], envs[i])
            ns[i].append(1e9 * seconds / args.pairs)
            if stats:
                dropped += stats[1]
                line.append(f"{'AB'[i - 1]} dropped {stats[1]}, {stats[2]}")
        print(f"round {rnd + 1:>2}: ns/pair " +
              ", ".join(f"{'untraced A B'.split()[i]} {ns[i][-1]:.1f}" for i in range(len(settings))) +
              "; " + ", ".join(line))
    report = {"pairs": args.pairs, "ns_per_pair": ns, "dropped": dropped,
              "untraced": summary("untraced", ns[0]),
              "added_a": summary(f"added by tracing (A {args.injector})",
                                 [v - b for b, v in zip(ns[0], ns[1])])}
    if args.compare:
        b_label = args.compare + "".join(f" {k}={v}" for k, v in b_env.items())
        report["added_b"] = summary(f"added by tracing (B {b_label})",
                                    [v - b for b, v in zip(ns[0], ns[2])])
        report["b_minus_a"] = summary("B - A", [b - a for a, b in zip(ns[1], ns[2])])
    print(f"{args.pairs} pairs a run in bursts of {args.burst}, CPU {args.cpu}, "
          f"records dropped {dropped}; load average after: {os.getloadavg()[0]:.2f} (1 min)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f)
    if dropped:
        print("traced runs dropped records: the added cost is not comparable")
        return 1
    return 1 if args.max_ns is not None and report["added_a"]["median"] > args.max_ns else 0


if __name__ == "__main__":
    sys.exit(main())
