#!/usr/bin/python3
"""Speed benchmarks, all measured in one run so the ratios compare like with like.

  generation   truffld-synth --preset bench --events N (1 M and 10 M; --quick: 1 M only):
               wall time, records/s, bytes
  merge        truffld-merge on those dumps: wall time, records/s, peak RSS (/usr/bin/time -v)
  diagnose     truffld-diagnose (peer mode, --llm off) on the 1 M merge
  inject       the injector's Google Benchmark microbenchmarks (tests/bench/inject_bench) if built
  kineto       truffld-merge importing ../shared/data/kineto/hta_df_index_resolver.json.gz
               vs /usr/bin/python3 json.load of the same file (the usual first step of Python
               trace tools); Holistic Trace Analysis itself is not packaged by Debian.
Writes WORK/speed.json. Every timing is one run on a shared 2-core machine: treat ratios as
the result and absolute numbers as indicative.
"""
import argparse
import glob
import json
import os
import subprocess
import tempfile
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import timed  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--shared-data", default=os.environ.get("TRUFFLD_SHARED_DATA", ""))
    ap.add_argument("--inject-bin", default="", help="build directory holding truffld_inject_bench (default: --bin)")
    ap.add_argument("--sizes", default="", help="comma list of record budgets (default 1M,10M; --quick 1M)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    log = lambda m: print(m, flush=True)  # noqa: E731
    synth = os.path.join(args.bin, "tools/synth/truffld-synth")
    merge = os.path.join(args.bin, "merge/truffld-merge")
    diag = os.path.join(args.bin, "diagnose/truffld-diagnose")
    out = {"runs": []}
    sizes = [1_000_000] if args.quick else [1_000_000, 10_000_000]
    if args.sizes:
        sizes = [int(float(x)) for x in args.sizes.split(",")]
    for n in sizes:
        d = os.path.join(args.work, f"gen-{n}")
        subprocess.run(["rm", "-rf", d])
        ok, wall, rss = timed([synth, "--preset", "bench", "--events", str(n), "-q", "--out", os.path.join(d, "dump")], log)
        if not ok:
            continue
        summ = json.load(open(os.path.join(d, "dump", "synth_summary.json")))
        run = {"target_events": n, "records": summ["records"], "bytes": summ["bytes_uncompressed"],
               "synth_wall_s": wall, "synth_rss_mib": rss, "synth_records_per_s": summ["records"] / wall,
               "synth_cpu_records_per_s": summ.get("records_per_cpu_second")}
        log(f"synth {n}: {summ['records']} records in {wall:.2f} s ({summ['records'] / wall / 1e6:.2f} M/s), RSS {rss:.0f} MiB")
        if os.path.exists(merge):
            files = sorted(glob.glob(os.path.join(d, "dump", "truffld-*.jsonl")))
            ok, mw, mrss = timed([merge, *files, "-o", os.path.join(d, "merged")], log)
            if ok:
                run.update(merge_wall_s=mw, merge_rss_mib=mrss, merge_records_per_s=summ["records"] / mw,
                           synth_over_merge_speed=(summ["records"] / wall) / (summ["records"] / mw))
                log(f"merge {n}: {mw:.2f} s ({summ['records'] / mw / 1e6:.2f} M records/s), peak RSS {mrss:.0f} MiB")
                if n == sizes[0] and os.path.exists(diag):
                    ok, dw, drss = timed([diag, os.path.join(d, "merged"), "-o", os.path.join(d, "diag"),
                                             "--mode", "peer", "--llm", "off", "--no-html", "-q"], log)
                    if ok:
                        run.update(diagnose_wall_s=dw, diagnose_rss_mib=drss)
                        log(f"diagnose {n}: {dw:.2f} s, peak RSS {drss:.0f} MiB")
        out["runs"].append(run)
        # Gigabytes of dumps and trees: keep only the small outputs.
        subprocess.run(["rm", "-rf", os.path.join(d, "dump"), os.path.join(d, "merged")])
    kin = os.path.join(args.shared_data, "kineto", "hta_df_index_resolver.json.gz") if args.shared_data else ""
    if kin and os.path.exists(kin) and os.path.exists(merge):
        ok1, mw, mrss = timed([merge, kin, "-o", os.path.join(args.work, "kineto-merged")], log)
        ok2, pw, prss = timed(["/usr/bin/python3", "-c",
                                  "import gzip,json,sys; json.load(gzip.open(sys.argv[1],'rt'))", kin], log)
        if ok1 and ok2:
            out["kineto"] = {"file": kin, "merge_wall_s": mw, "merge_rss_mib": mrss, "python_json_load_wall_s": pw,
                             "python_rss_mib": prss, "python_over_merge_time": pw / mw}
            log(f"kineto: truffld-merge (import + full merge) {mw:.2f} s / {mrss:.0f} MiB vs python json.load "
                f"{pw:.2f} s / {prss:.0f} MiB -> ratio {pw / mw:.2f}x")
    else:
        out["kineto"] = {"skipped": "truffld-merge or the shared Kineto trace is missing"}
    # The injector's Google Benchmark microbenchmarks, when that target is built: the same calls
    # with capture off (NVTX's no-op path) and on (injector attached), in one run of this script,
    # so the figure that matters is the difference (ns added per call by capture).
    out["inject_bench"] = inject_bench(args.inject_bin or args.bin, log)
    json.dump(out, open(os.path.join(args.work, "speed.json"), "w"), indent=1)
    return 0


def inject_bench(bin_dir, log):
    bench = next((p for p in (os.path.join(bin_dir, "tests/inject/truffld_inject_bench"),
                              os.path.join(bin_dir, "tests/bench/truffld_inject_bench")) if os.path.exists(p)), None)
    if not bench:
        return {"skipped": "truffld_inject_bench is not built in this build directory (needs CUDA headers and "
                           "libbenchmark-dev)"}
    medians = {}
    for mode in ("off", "on"):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, TRUFFLD_OUTPUT_DIR=d)
            r = subprocess.run([bench, f"--capture={mode}", "--benchmark_format=json", "--benchmark_repetitions=5",
                                "--benchmark_report_aggregates_only=true"], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            return {"error": f"--capture={mode}: " + r.stderr[-500:]}
        try:
            for b in json.loads(r.stdout)["benchmarks"]:
                if b.get("aggregate_name") == "median":
                    medians.setdefault(b["run_name"], {})[mode] = b["cpu_time"]
        except (ValueError, KeyError) as e:
            return {"error": f"--capture={mode}: unreadable benchmark JSON: {e}"}
    rows = []
    for name, m in medians.items():
        row = {"name": name, "off_ns": m.get("off"), "on_ns": m.get("on")}
        if row["off_ns"] is not None and row["on_ns"] is not None:
            row["added_ns"] = row["on_ns"] - row["off_ns"]
        rows.append(row)
        log(f"inject_bench {name}: off {row['off_ns']} ns, on {row['on_ns']} ns")
    return rows


if __name__ == "__main__":
    sys.exit(main())
