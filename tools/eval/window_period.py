#!/usr/bin/python3
"""How often a two-tier capture needs detail windows: the same synthetic run (truffld-synth
--preset suite, one seed) captured in full and with `--two-tier --device-windows steps:N:M` for
each period N, merged and diagnosed (`--llm off`), and scored inside the windows only: of the
labelled abnormal units whose step has device detail, how many are found, how many of those name
a labelled faulty family, and how many unlabelled units in windows are called abnormal.

Why: planned windows of M steps in every N cost about M x k / N of a run (README, *Two tiers*),
so a longer period is cheaper; this says what it costs the diagnosis of the steps that do get
detail (their layer and tensor-parallel peers come from the same step, their similar steps from
the other windows). Never asserts; prints one table row per capture.

Run from the source root with a build (truffld-synth, truffld-merge, truffld-diagnose):
    /usr/bin/python3 tools/eval/window_period.py --bin build --work /tmp/wp [--periods 4,8,16,32,64]
                                                 [--steps N]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402  (tools/eval, beside this file)


def detail_of(merged):
    """{(rank, step_index): whether the step has device detail} from trees.jsonl."""
    out = {}
    with open(os.path.join(merged, "trees.jsonl"), encoding="utf-8") as f:
        for line in f:
            t = json.loads(line)
            key = (t.get("rank"), t.get("step_index"))
            out[key] = out.get(key, False) or t.get("device_detail", True)
    return out


def score(sdir):
    """Counts inside windows: labelled abnormal units, found, blamed right, false alarms."""
    detail = detail_of(os.path.join(sdir, "merged"))
    units = {(u["rank"], u["step_index"], u["view"]): u
             for u in common.read_jsonl(os.path.join(sdir, "diag", "diagnosis.jsonl"))}
    c = {"labelled": 0, "found": 0, "blamed": 0, "false_alarms": 0, "units": 0}
    for lab in common.read_jsonl(os.path.join(sdir, "dump", "labels.jsonl")):
        if not detail.get((lab["rank"], lab["step_index"]), True):
            continue
        c["units"] += 1
        u = units.get((lab["rank"], lab["step_index"], lab["view"]))
        flagged = u is not None and u.get("label") == "abnormal"
        if lab["abnormal"]:
            c["labelled"] += 1
            c["found"] += flagged
            named = {f.get("family") for f in (u or {}).get("faulty", [])}
            c["blamed"] += flagged and bool(named & set(lab["faulty"]))
        else:
            c["false_alarms"] += flagged
    detailed = sum(1 for d in detail.values() if d)
    return c, detailed, len(detail)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", required=True, help="build folder with the three tools")
    p.add_argument("--work", required=True, help="scratch folder (one subfolder per capture)")
    p.add_argument("--periods", default="4,8,16,32,64", help="comma-separated N of steps:N:M")
    p.add_argument("--window-steps", type=int, default=2, help="M of steps:N:M")
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--steps", type=int, default=0,
                   help="steps per rank (default: the suite preset's); a long run shows long periods")
    a = p.parse_args()
    tools = common.Tools(a.bin)
    if not tools.have("synth", "merge", "diagnose"):
        sys.exit("window_period: truffld-synth, truffld-merge or truffld-diagnose missing under " + a.bin)
    log = common.Log(a.work, "window_period")
    plans = ["steps:%d:%d" % (int(n), a.window_steps) for n in a.periods.split(",")]
    captures = [("all", [])] + [(plan, ["--two-tier", "--device-windows", plan]) for plan in plans]
    rows = []
    for name, extra in captures:
        sdir = os.path.join(a.work, name.replace(":", "_"))
        length = ["--steps", str(a.steps)] if a.steps > 0 else []
        if common.synth_and_merge(tools, sdir, ["--preset", "suite", "--seed", str(a.seed)] + length + extra, log,
                                  keep_dumps=False) is None:
            log("%s: synth or merge failed (see the log)" % name)
            continue
        ok, _ = common.diagnose(tools, os.path.join(sdir, "merged"), os.path.join(sdir, "diag"), log)
        if not ok:
            log("%s: diagnose failed (see the log)" % name)
            continue
        c, detailed, steps = score(sdir)
        rows.append("| `%s` | %d of %d | %d of %d | %d | %d of %d |"
                    % (name, detailed, steps, c["found"], c["labelled"], c["blamed"], c["false_alarms"],
                       c["units"] - c["labelled"]))
    print("| capture | rank-steps with detail | labelled abnormal units in windows found | of them blamed on a "
          "labelled family | false alarms in windows (of unlabelled units) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
