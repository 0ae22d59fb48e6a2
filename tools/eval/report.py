#!/usr/bin/python3
"""Writes BENCHMARKS.md from the harness's outputs in WORK: results.json (evaluate.py), healthy.json
(healthy.py), real.json (realtraces.py), cost.json (cost.py) and speed.json (speed.py); any of them
may be missing (its section then says "not run").

Sections of the old file that this script does not generate (a "## " heading it does not own,
added by hand) are carried over unchanged to the end of the new file.
"""
import argparse
import datetime
import json
import os
import platform
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_tables as T  # noqa: E402

# Headings this script writes (and headings older versions of it wrote): never carried over.
GENERATED = {"Summary", "Targets", "How to read these tables", "Detection quality: default suite (realistic fault rate)",
             "Detection quality: stress suite (high fault rate)", "False alarms on healthy runs",
             "Real traces", "Real serving engine", "Cost of Stage I", "Speed", "Per-scenario results",
             "Detection quality (Table 2 layout)", "Reading these numbers"}

READING = [
    "## How to read these tables", "",
    "- **Unit**: one (rank, step) in one **view**. The *vertical* view holds a step's compute, copy and host "
    "operators on that rank; the *horizontal* view its communication (NCCL collectives, pipeline send/recv). "
    "A synthetic fault labels a unit abnormal when its slowdown is at least 1.25x and it cost the step at least 1% "
    "of the step's time without it (the generator re-simulates the step without faults; `--label-min-cost-share`): "
    "a cheaper one, such as a host stall the GPU queue absorbed, is labelled normal, as truffld-diagnose's 1% "
    "impact floor would judge it. A slowed shared transfer labels every participant in the horizontal view.",
    "- **Family**: an operator name (e.g. `aten::mm`, `ncclAllReduce`); the labels name the faulty families of "
    "each abnormal unit.",
    "- **Step metrics** (Acc, Prec, Rec, F1): a unit counts as predicted abnormal when the method says so; "
    "`insufficient_evidence` counts as not abnormal, and the *insufficient* column counts such units.",
    "- **Macro P/F1/J**: per-family precision, F1 and Jaccard over the units, averaged over every family of the "
    "view; **Macro+** averages only over families that are faulty in at least one unit.",
    "- **Op prec** (operator precision): correct blames / all blames, micro over (unit, family) pairs that a "
    "method names as faulty; *blames* is how many it named. \"Flag every step\" and \"flag no step\" name none.",
    "- **Held-out split**: units are split 50/25/25 (train/validation/test) by a hash of scenario, rank and step. "
    "The methods tables score every method on the test split; the baselines are fitted on train and choose "
    "their configuration and threshold (best operator F1) on validation. truffld fits nothing from labels and "
    "runs with `--llm off` (Stage II = the offline policy on its calibrated evidence).",
    "- **Per class** and **per scenario** tables score truffld on every unit of each run (no split), pooled over "
    "seeds; the seed range is the min-max of per-seed F1; F1 is \"–\" where a view has no labelled abnormal unit "
    "(the false alarms column then says what it flagged). Excess = observed minus expected time truffld reports "
    "for a blamed operator (`excess_ns`), averaged over correct blames.",
    "- **False-alarm rate** (healthy runs, `--faults none`): abnormal units / judged units, judged = units not "
    "labelled `insufficient_evidence`, pooled over seeds; \"worst seed\" is the highest per-seed rate. "
    "truffld-diagnose's default `--false-alarm-rate` is 0.01.",
    "- Timings are single runs on a shared machine: compare within a table.", ""]


def speed_section(spd):
    md = ["## Speed", "", "Generation and merge of `truffld-synth --preset bench` dumps (8 ranks on 2 hosts, 36 "
          "layers); wall times include writing to disk. synth/merge = how many times faster generation is than "
          "merging the same records; diagnose = truffld-diagnose (peer mode) on the smallest merge.", "",
          "| records | synth wall s | synth M rec/s (wall) | synth M rec/CPU-s | merge wall s | merge M rec/s | "
          "merge peak RSS MiB | synth/merge speed | diagnose s |", "|---|---|---|---|---|---|---|---|---|"]

    def f(x, nd=2):
        return "–" if x is None else f"{x:.{nd}f}"
    for r in spd.get("runs", []):
        cpu = r.get("synth_cpu_records_per_s")
        md.append(f"| {r['records']:,} | {f(r.get('synth_wall_s'))} | {f(r['synth_records_per_s'] / 1e6)} | "
                  f"{f(cpu / 1e6 if cpu else None)} | {f(r.get('merge_wall_s'))} | "
                  f"{f(r['merge_records_per_s'] / 1e6 if r.get('merge_records_per_s') else None)} | "
                  f"{f(r.get('merge_rss_mib'), 0)} | {f(r.get('synth_over_merge_speed'), 1)}x | "
                  f"{f(r.get('diagnose_wall_s'))} |")
    md.append("")
    k = spd.get("kineto", {})
    if "merge_wall_s" in k:
        md.append(f"Kineto trace `{os.path.basename(k['file'])}`: truffld-merge (import and full merge) "
                  f"{k['merge_wall_s']:.2f} s, peak {k['merge_rss_mib']:.0f} MiB; `/usr/bin/python3` `json.load` alone "
                  f"{k['python_json_load_wall_s']:.2f} s, peak {k['python_rss_mib']:.0f} MiB: Python's parse takes "
                  f"{k['python_over_merge_time']:.2f}x truffld's whole merge. Holistic Trace Analysis is not packaged "
                  "by Debian and was not run.")
    else:
        md.append(f"Kineto comparison: {k.get('skipped', 'not run')}.")
    md.append("")
    ib = spd.get("inject_bench")
    if isinstance(ib, list) and ib:
        md += ["Injector microbenchmarks (`truffld_inject_bench --capture=off|on`, Google Benchmark, median CPU ns per "
               "iteration of 5 repetitions, both modes measured in this run; an NVTX iteration is a push+pop pair, an "
               "API iteration one replayed CUDA API callback):", "",
               "| benchmark | capture off | capture on | added by capture |", "|---|---|---|---|"]
        ns = lambda v: "–" if v is None else f"{v:.1f}"  # noqa: E731
        md += [f"| {b['name']} | {ns(b.get('off_ns'))} | {ns(b.get('on_ns'))} | {ns(b.get('added_ns'))} |" for b in ib]
        md.append("")
    elif isinstance(ib, dict):
        md += [f"Injector microbenchmarks: {ib.get('skipped') or ib.get('error')}.", ""]
    return md


def carried_sections(path):
    """'## ' sections of the existing file whose heading this script does not generate."""
    if not os.path.exists(path):
        return []
    text = open(path, encoding="utf-8").read()
    parts = re.split(r"(?m)^(?=## )", text)
    keep = []
    for p in parts[1:]:
        heading = p.splitlines()[0][3:].strip()
        if heading not in GENERATED:
            keep.append(p.rstrip("\n"))
    return keep


def load(work, name):
    p = os.path.join(work, name)
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None


def detection(res):
    md = []
    suites = (res or {}).get("suites", {})
    quick = (res or {}).get("quick", False)
    for suite, title, rate in (("default", "Detection quality: default suite (realistic fault rate)",
                                "every fault class at mild (1.3/1.6x) and at strong (2.5/4.0x) intensity, and a mixed "
                                "scenario (all classes, intensities 1.1-4.0x; 1.1x perturbs without labelling), "
                                "`--preset suite --abnormal-fraction 0.1` (4 ranks: 2 hosts x TP2, 4 layers, 120 steps)"),
                               ("stress", "Detection quality: stress suite (high fault rate)",
                                "faults in about half of the (rank, step) pairs, `--preset suite --abnormal-fraction 0.5`: "
                                "the mixed scenario per seed" + ("" if quick else ", and every class at strong intensity (seed 1)"))):
        md += [f"## {title}", ""]
        s = suites.get(suite)
        if not s:
            md += ["Not run." + (" (truffld binaries missing)" if (res or {}).get("missing_tools") else ""), ""]
            continue
        md += [f"Scenarios: {rate}.", ""] + T.suite_intro(suite, s, quick)
        md += ["### Methods on the held-out test split", ""] + T.methods(s) + T.per_family(s)
        pc = T.per_class(s)
        if pc:
            md += ["### Per fault class and intensity (truffld peer, whole runs, pooled over seeds)", ""] + pc
    return md


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--note", default="", help="extra sentence for the header (e.g. which commit was built)")
    ap.add_argument("--runtime", default="", help="how long the run took, for the header")
    args = ap.parse_args()
    res, healthy, real = load(args.work, "results.json"), load(args.work, "healthy.json"), load(args.work, "real.json")
    engine = load(args.work, "engine.json")
    cost, spd = load(args.work, "cost.json"), load(args.work, "speed.json")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = ["# truffld benchmarks", "",
          f"Produced by `{args.command}` on {now} ({platform.machine()}, {os.cpu_count()} cores, shared with other "
          f"jobs{'; ' + args.runtime if args.runtime else ''}). Rerun that command to regenerate this file; "
          "tools/eval/README.md describes the harness." + (" " + args.note if args.note else ""), ""]
    # Real data first: what truffld says on traces nobody here shaped, then the synthetic scores.
    md += T.summary(res, healthy, real)
    md += ["## Real traces", "", "Each file of the shared data folder (`" + ((real or {}).get("data") or "?") +
           "`) through `truffld-merge FILE` and `truffld-diagnose --llm off` (peer mode): units per view by label, "
           "what each abnormal unit cost its step (the step time saved without the anomaly, by what-if replay; "
           "its share of the step), and the run findings and persistent stragglers reported once for the run.",
           ""] + T.real_table(real)
    md += ["## Real serving engine", "",
           "transformers' continuous-batching engine serving a random Qwen2 on a GPU, traced by the injector and "
           "the hooks (`tests/gpu/real_engine.sh`; the dumps, their ground truth and how they were made are in "
           "`" + ((engine or {}).get("data") or "tests/data/real_engine") + "`, see its README), through "
           "`truffld-merge` and `truffld-diagnose --llm off`, vertical view, scored against truth.json. False alarms: "
           "flagged steps without a fault (steps at the edge of a contention window excluded) over the judged "
           "fault-free steps.", ""] + T.engine_table(engine) + T.overhead_table(engine)
    md += T.targets(res, healthy, real, cost) + READING + detection(res)
    md += ["## False alarms on healthy runs", "",
           "`truffld-synth --faults none` over workload shapes, diagnosed in peer mode (default) and in the legacy "
           "pooled mode.", ""] + T.healthy_table(healthy)
    md += ["## Cost of Stage I", "", "`truffld-diagnose --llm off --no-html` wall time and peak RSS "
           f"({(cost or {}).get('cores', '?')} cores, default threads); instances = stats.json `input.instances`.",
           ""] + T.cost_table(cost)
    if spd:
        md += speed_section(spd)
    suites = [(n, s) for n, s in (res or {}).get("suites", {}).items() if s]
    if suites:
        md += ["## Per-scenario results", ""]
    for suite, s in suites:
        md += [f"<details><summary>{suite} suite: every scenario (truffld, whole runs)</summary>", ""]
        md += T.per_scenario(s) + ["</details>", ""]
    carried = carried_sections(args.out)
    if carried:
        md += ["", *carried, ""]
    text = "\n".join(md)
    text = re.sub(r"\n{3,}", "\n\n", text)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text.rstrip("\n") + "\n")
    print(f"wrote {args.out}" + (f" (carried over {len(carried)} hand-written sections)" if carried else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
