#!/usr/bin/python3
"""Writes BENCHMARKS.md from WORK/results.json (evaluate.py) and WORK/speed.json (speed.py)."""
import argparse
import datetime
import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402


def fmt(x, nd=2):
    return "–" if x is None else f"{x:.{nd}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--note", default="", help="extra sentence for the header (e.g. which commit was built)")
    args = ap.parse_args()
    rp, sp = os.path.join(args.work, "results.json"), os.path.join(args.work, "speed.json")
    res = json.load(open(rp)) if os.path.exists(rp) else None
    spd = json.load(open(sp)) if os.path.exists(sp) else None
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = ["# truffld benchmarks", "",
          f"Produced by `{args.command}` on {now} ({platform.machine()}, {os.cpu_count()} cores, shared "
          "with other jobs; one run each, so ratios matter more than absolute times). Rerun that "
          "command to regenerate this file. Data: `truffld-synth` scenarios (see tools/synth/README.md); "
          "ground truth from its labels.jsonl." + (" " + args.note if args.note else ""), ""]
    if res:
        md += ["## Detection quality (Table 2 layout)", ""]
        md.append(f"Scenarios: {len(res['scenarios'])} ({'quick' if res['quick'] else 'full'} suite: every fault "
                  "class at mild (1.3/1.6) and strong (2.5/4.0) intensity plus a mixed scenario, "
                  f"{'1 seed' if res['quick'] else '3 seeds'}). Methods are scored on the same held-out test "
                  "split (25% of steps, by hash of scenario/rank/step); baseline hyper-parameters and "
                  "thresholds were chosen on the validation split (25%), models fitted on the training "
                  "split (50%). truffld runs with `--llm off` (Stage II = the offline policy).")
        md.append("")
        if not res.get("have_merge") or not res.get("have_diagnose"):
            md.append("**truffld-merge / truffld-diagnose were not built when this ran: only label statistics "
                      "are available below.**")
            md.append("")
        for view, rows in res.get("tables", {}).items():
            md += [f"### {view} view", "", metrics.format_table("Method", rows)]
        md += ["### Per scenario (truffld pooled, whole run, from diagnose's metrics.json)", "",
               "| scenario | records | abnormal V/H rank-steps | V step F1 | V Macro+ F1 | H step F1 | H Macro+ F1 |",
               "|---|---|---|---|---|---|---|"]
        for name, info in res["scenarios"].items():
            m = info.get("metrics_full_run", {})
            v, h = m.get("vertical", {}), m.get("horizontal", {})
            ab = info.get("abnormal", {})
            md.append(f"| {name} | {info.get('records')} | {ab.get('vertical')}/{ab.get('horizontal')} of "
                      f"{info.get('rank_steps')} | {fmt(v.get('step', {}).get('f1'), 3)} | "
                      f"{fmt(v.get('operator', {}).get('macro_plus', {}).get('f1'), 3)} | "
                      f"{fmt(h.get('step', {}).get('f1'), 3)} | "
                      f"{fmt(h.get('operator', {}).get('macro_plus', {}).get('f1'), 3)} |")
        md.append("")
        for v, c in res.get("label_coverage", {}).items():
            inv = ", ".join(f"{f} {n}" for f, n in list(c["invisible_by_family"].items())[:6])
            md.append(f"Label coverage, {v}: {c['visible']} of {c['true_pairs']} labelled faulty (step, family) pairs "
                      f"({100 * c['share']:.1f}%) have an instance of that family in the merged trees"
                      + (f"; invisible: {inv}." if inv else "."))
            md.append("")
        ls = res.get("label_stats", {})
        md.append("Label statistics over all scenarios: " + ", ".join(
            f"{v}: {s['abnormal']} of {s['steps']} steps abnormal ({100 * s['share']:.1f}%)" for v, s in ls.items()))
        md.append("")
    if spd:
        md += ["## Speed", "", "Generation and merge of `truffld-synth --preset bench` dumps (8 ranks on 2 hosts, 36 "
               "layers); wall times include writing to disk. synth/merge = how many times faster generation "
               "is than merging the same records.", "",
               "| records | synth wall s | synth M rec/s (wall) | synth M rec/CPU-s | merge wall s | merge M rec/s | "
               "merge peak RSS MiB | synth/merge speed | diagnose s |", "|---|---|---|---|---|---|---|---|---|"]
        for r in spd.get("runs", []):
            cpu = r.get("synth_cpu_records_per_s")
            md.append(f"| {r['records']:,} | {fmt(r.get('synth_wall_s'))} | {fmt(r['synth_records_per_s'] / 1e6)} | "
                      f"{fmt(cpu / 1e6 if cpu else None)} | "
                      f"{fmt(r.get('merge_wall_s'))} | "
                      f"{fmt(r['merge_records_per_s'] / 1e6 if r.get('merge_records_per_s') else None)} | "
                      f"{fmt(r.get('merge_rss_mib'), 0)} | {fmt(r.get('synth_over_merge_speed'), 1)}x | "
                      f"{fmt(r.get('diagnose_wall_s'))} |")
        md.append("")
        k = spd.get("kineto", {})
        if "merge_wall_s" in k:
            md.append(f"Kineto trace `{os.path.basename(k['file'])}` (216,092 events): truffld-merge (import and "
                      f"full merge) {k['merge_wall_s']:.2f} s, peak {k['merge_rss_mib']:.0f} MiB; "
                      f"`/usr/bin/python3` `json.load` alone {k['python_json_load_wall_s']:.2f} s, peak "
                      f"{k['python_rss_mib']:.0f} MiB: Python's parse takes {k['python_over_merge_time']:.2f}x "
                      "truffld's whole merge. Holistic Trace Analysis is not packaged by Debian and was not run.")
        else:
            md.append(f"Kineto comparison: {k.get('skipped', 'not run')}.")
        md.append("")
        ib = spd.get("inject_bench")
        if isinstance(ib, list) and ib:
            md += ["Injector microbenchmarks (`truffld_inject_bench --capture=off|on`, Google Benchmark, median "
                   "CPU ns per iteration of 5 repetitions, both modes measured in this run; an NVTX iteration is a "
                   "push+pop pair, an API iteration one replayed CUDA API callback):", "",
                   "| benchmark | capture off | capture on | added by capture |", "|---|---|---|---|"]
            ns = lambda v: "–" if v is None else f"{v:.1f}"
            md += [f"| {b['name']} | {ns(b.get('off_ns'))} | {ns(b.get('on_ns'))} | {ns(b.get('added_ns'))} |"
                   for b in ib]
            md.append("")
        elif isinstance(ib, dict):
            md += [f"Injector microbenchmarks: {ib.get('skipped') or ib.get('error')}.", ""]
    md += ["## Reading these numbers", "",
           "- Decode steps replay CUDA graphs, so their operators exist only as `GRAPH_NODE` capture records; "
           "the labels name the operator open at capture (the design's rule). *Label coverage* above says how "
           "many labelled (step, family) pairs have that family in the merged trees at all: anything below "
           "100% is an upper bound no detector can pass, and points at graph-replay attribution in the merge.",
           "- Other ranks of a TP group wait longer in their all-reduce when one rank is slowed; that is real "
           "behaviour and unlabelled, so horizontal-view false alarms are expected on those ranks.",
           "- Negligible (1.1x) faults exist in the mixed scenarios on purpose and are not labelled.", ""]
    with open(args.out, "w") as f:
        f.write("\n".join(md))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
