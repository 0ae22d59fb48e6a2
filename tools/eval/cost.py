#!/usr/bin/python3
"""Cost of Stage I: wall time and peak RSS of truffld-diagnose (peer mode, --llm off, no HTML) on
  - the largest scenario of the evaluation suites (most instances, from WORK/results.json), and
    the legacy pooled mode on the same trees for comparison;
  - truffld-synth --preset bench --events N (8 ranks on 2 hosts, 36 layers) merged, for each N
    of --events (default 1M and 11M, about 0.4 M and 5 M instances; --quick 1M).
Instances = stats.json "input"."instances". Each figure is one run on a shared machine.
Writes WORK/cost.json; a failing run is logged and left out.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def time_diagnose(tools, merged, ddir, mode, log, threads):
    cmd = [tools.diagnose, merged, "-o", ddir, "--mode", mode, "--llm", "off", "--no-html", "-q"]
    if threads:
        cmd += ["--threads", str(threads)]
    ok, wall, rss = common.timed(cmd, log)
    if not ok:
        return None
    return {"mode": mode, "seconds": wall, "rss_mib": rss, "instances": common.instances(os.path.join(ddir, "stats.json"))}


def largest_scenario(work):
    try:
        res = json.load(open(os.path.join(work, "results.json")))
    except (OSError, ValueError):
        return None
    best = None
    for suite in res.get("suites", {}).values():
        for name, info in suite.get("scenarios", {}).items():
            n = info.get("instances") or 0
            if info.get("merged") and os.path.exists(info["merged"]) and (best is None or n > best[1]):
                best = (name, n, info["merged"], info.get("args", ""))
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--events", default="", help="comma list of bench record budgets")
    ap.add_argument("--threads", type=int, default=0, help="truffld-diagnose --threads (0: its default, all cores)")
    args = ap.parse_args()
    log = common.Log(args.work, "cost")
    tools = common.Tools(args.bin)
    out = {"runs": [], "cores": os.cpu_count()}
    if not tools.have("synth", "merge", "diagnose"):
        out["skipped"] = f"a truffld binary is missing under {args.bin}"
    else:
        cdir = os.path.join(args.work, "cost")
        big = largest_scenario(args.work)
        if big:
            for mode in ("peer", "pooled"):
                r = time_diagnose(tools, big[2], os.path.join(cdir, f"suite-{mode}"), mode, log, args.threads)
                if r:
                    out["runs"].append(r | {"what": f"suite scenario {big[0]}", "flags": big[3]})
        sizes = [1_000_000] if args.quick else [1_000_000, 11_000_000]
        if args.events:
            sizes = [int(float(x)) for x in args.events.split(",")]
        for n in sizes:
            sdir = os.path.join(cdir, f"bench-{n}")
            flags = ["--preset", "bench", "--events", str(n)]
            summ = common.synth_and_merge(tools, sdir, flags, log)
            if summ:
                r = time_diagnose(tools, os.path.join(sdir, "merged"), os.path.join(sdir, "diag"), "peer", log,
                                  args.threads)
                if r:
                    out["runs"].append(r | {"what": f"bench, {summ['records']:,} records", "flags": " ".join(flags),
                                            "merge_seconds": summ.get("merge_seconds")})
            subprocess.run(["rm", "-rf", os.path.join(sdir, "dump"), os.path.join(sdir, "merged")])
        for r in out["runs"]:
            log(f"cost: {r['what']} ({r['mode']}): {r['instances']} instances in {r['seconds']:.1f} s, "
                f"peak {r['rss_mib'] or 0:.0f} MiB")
    with open(os.path.join(args.work, "cost.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
