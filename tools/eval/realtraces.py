#!/usr/bin/python3
"""Verdicts on the real traces of the shared data folder (TRUFFLD_SHARED_DATA, else ../shared/data
beside the checkout): every kineto/*.json.gz and nsys/*.sqlite is merged with truffld-merge and
diagnosed with truffld-diagnose --llm off (peer mode). Per file and view: units by label; each
abnormal unit with what it cost its step (impact_ns, its share of the step); the run findings
and persistent stragglers stats.json reports; and the evidence sentence of the first abnormal
unit (else of the first insufficient_evidence unit) so a reader sees the justification. Writes WORK/real.json; when the folder is absent it says so.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import scenarios  # noqa: E402
from common import VIEWS  # noqa: E402


def first_evidence(units, label):
    """(view, rank, step, evidence) of the first unit with that label in (view, rank, step) order."""
    for v in VIEWS:
        for k in sorted(units[v], key=lambda k: (k[1], k[2])):
            u = units[v][k]
            if u["label"] == label:
                return {"view": v, "rank": k[1], "step": k[2], "evidence": u["evidence"],
                        "operator_evidence": u.get("top_blame_evidence", "")}
    return None


def abnormal_costs(units):
    """[{view, rank, step, impact_ns, share}] of the abnormal units (read_diagnosis), by view, rank
    and step."""
    out = []
    for v in VIEWS:
        for k in sorted(units[v], key=lambda k: (k[1], k[2])):
            u = units[v][k]
            if u["label"] != "abnormal":
                continue
            dur, impact = u.get("duration_ns") or 0, u.get("impact_ns")
            out.append({"view": v, "rank": k[1] or None, "step": k[2], "impact_ns": impact,
                        "share": impact / dur if impact is not None and dur > 0 else None})
    return out


def run_findings(stats_path):
    """The run findings and persistent stragglers of stats.json's peer section: their sentences."""
    with open(stats_path) as f:
        peer = json.load(f).get("peer") or {}
    return [x.get("evidence", "") for key in ("run_findings", "persistent_stragglers") for x in peer.get(key) or []]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--data", default=scenarios.shared_data_dir())
    args = ap.parse_args()
    log = common.Log(args.work, "realtraces")
    tools = common.Tools(args.bin)
    args.data = os.path.normpath(args.data)
    res = {"data": args.data, "traces": []}
    traces = scenarios.real_traces(args.data) if os.path.isdir(args.data) else []
    if not traces:
        res["skipped"] = f"no kineto/*.json.gz or nsys/*.sqlite under {args.data}"
        log(f"realtraces: SKIPPED: {res['skipped']}")
    elif not tools.have("merge", "diagnose"):
        res["skipped"] = f"truffld-merge or truffld-diagnose missing under {args.bin}"
        log(f"realtraces: SKIPPED: {res['skipped']}")
    for name, path in traces if "skipped" not in res else []:
        try:
            row = diagnose_trace(tools, args.work, name, path, log)
        except Exception as e:  # noqa: BLE001 - one unreadable trace must not stop the others
            row = {"name": name, "file": path, "failed": f"{type(e).__name__}: {e}"}
        res["traces"].append(row)
        log(f"{name}: " + (row.get("failed", "") or json.dumps(row["counts"])))
    with open(os.path.join(args.work, "real.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0


def diagnose_trace(tools, work, name, path, log):
    """Merges and diagnoses one trace; returns its row."""
    d = os.path.join(work, "real", name.replace("/", "-"))
    row = {"name": name, "file": path}
    ok, tm = common.run([tools.merge, path, "-o", os.path.join(d, "merged"), "--no-trace-json", "-q"], log)
    row["merge_seconds"] = tm
    if ok:
        ok, td = common.diagnose(tools, os.path.join(d, "merged"), os.path.join(d, "diag"), log)
        row["diagnose_seconds"] = td
        if ok:
            units = common.read_diagnosis(os.path.join(d, "diag", "diagnosis.jsonl"), name)
            row["counts"] = {v: common.label_counts(units[v]) for v in VIEWS}
            per_rank = {}
            for k in units["vertical"]:
                per_rank.setdefault(k[1], set()).add(k[2])
            row["ranks"] = len(per_rank)
            row["max_steps_per_rank"] = max((len(x) for x in per_rank.values()), default=0)
            row["instances"] = common.instances(os.path.join(d, "diag", "stats.json"))
            row["abnormal"] = abnormal_costs(units)
            row["run_findings"] = run_findings(os.path.join(d, "diag", "stats.json"))
            row["abnormal_example"] = first_evidence(units, "abnormal")
            row["insufficient_example"] = first_evidence(units, "insufficient_evidence")
        else:
            row["failed"] = "diagnose"
    else:
        row["failed"] = "merge"
    return row


if __name__ == "__main__":
    sys.exit(main())
