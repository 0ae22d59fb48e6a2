"""The diagnosis on the Perfetto trace, end to end: truffld-synth --preset small | truffld-merge |
truffld-diagnose, then the structure of trace.json and diagnosis.trace.json:
  - both are valid JSON against schemas/trace.schema.json, one event per line;
  - step slices carry step_index, rank, requests, phase; operator slices are named by family
    (the names of operator slices are exactly the families of trees.jsonl's operator nodes);
  - diagnosis.trace.json holds every merge event unchanged but for the added keys, a
    "truffld diagnosis" process whose unit slices match diagnosis.jsonl's abnormal and
    insufficient-evidence units and span their step's slice exactly;
  - every flow_out has exactly one flow_in and the reverse, each marker's arrow starts at an
    operator slice of its family with its times on its rank, and would bind as Perfetto's JSON
    importer binds v2 flows (the operator slice sorts before the marker: ts, longer first, file
    order), and every diagnosis track nests;
  - step slices carry each view's verdict; --no-trace removes an earlier copy; a planted
    symlink is replaced, not followed; an annotated trace given as --trace is refused (exit 1);
    without trace.json beside the trees nothing is written and a note says why.
No viewer binary is available here (Perfetto's trace_processor is neither a Debian nor an npm
package), so the importer's binding rules are checked as stated above.

Usage: trace_overlay_test.py --diag BIN --synth BIN --merge BIN --schema JSON --work DIR"""
import argparse
import glob
import json
import os
import shutil
import sys

import jsonschema

from cli_test_util import fail, run

OPERATORS = {"frontend_op", "backend_op", "comm", "other"}
OVERLAY_FLOW_BASE = 1 << 40
DIAG_PID = 999999


def load_lines(path):
    """The trace as JSON, checking one event per line as the writers promise."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    doc = json.loads(text)
    lines = text.split("\n")
    events = [json.loads(l.rstrip(",")) for l in lines[1:] if l not in ("", "]}")]
    if events != doc["traceEvents"]:
        fail(f"{path}: events are not one per line")
    return doc


def operator_families(trees_path):
    fams = set()
    with open(trees_path) as f:
        for line in f:
            stack = [json.loads(line)["root"]]
            while stack:
                n = stack.pop()
                if n["layer"] in OPERATORS:
                    fams.add(n["family"])
                stack += n.get("children", [])
    return fams


def check_merge_trace(t, families):
    names = set()
    steps = 0
    for e in t["traceEvents"]:
        if e["ph"] != "X":
            continue
        if e["cat"] in OPERATORS:
            names.add(e["name"])
            if ", op_id" in e["name"] or ", seq" in e["name"]:
                fail(f"operator slice keeps call ids in its name: {e['name']}")
        if e["cat"] == "step":
            steps += 1
            for k in ("step_index", "rank", "requests", "request_count", "phase"):
                if k not in e.get("args", {}):
                    fail(f"step slice without args.{k}: {e}")
    if names != families:
        fail(f"operator slice names != families: {sorted(names ^ families)[:10]}")
    if not steps:
        fail("no step slices")


def strip_added(e):
    e = json.loads(json.dumps(e))
    if e.get("bind_id", 0) >= OVERLAY_FLOW_BASE:
        del e["bind_id"]
        e.pop("flow_out", None)
    for k in ("verdict_vertical", "verdict_horizontal"):
        e.get("args", {}).pop(k, None)
    return e


def sort_key(i, e):
    """Perfetto's JSON sort for slices: ts, the longer first, then file order."""
    return (e["ts"], -e["dur"], i)


def check_nesting(events, where):
    tracks = {}
    for e in events:
        tracks.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for tid, spans in tracks.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for s, end in spans:
            while stack and stack[-1] <= s:
                stack.pop()
            if stack and end > stack[-1] + 1e-9:
                fail(f"{where}: track {tid} has crossing slices at ts {s}")
            stack.append(end)


def check_annotated(merged, annotated, diagnoses, families):
    m_events, a_events = merged["traceEvents"], annotated["traceEvents"]
    if annotated["otherData"].get("annotated_by") != "truffld-diagnose":
        fail("otherData.annotated_by missing")
    n = len(m_events)
    if [strip_added(e) for e in a_events[:n]] != m_events:
        fail("the merge events changed beyond the added keys")
    overlay = a_events[n:]
    if any(e["pid"] != DIAG_PID for e in overlay):
        fail("overlay events outside the diagnosis process")
    if not any(e["ph"] == "M" and e["name"] == "process_name" and e["args"]["name"] == "truffld diagnosis" for e in overlay):
        fail("no 'truffld diagnosis' process name")
    slices = [e for e in overlay if e["ph"] == "X"]
    check_nesting(slices, "diagnosis process")
    # Units: one slice per abnormal / insufficient unit, spanning its step's slice.
    step_slices = {(e["pid"], e["args"]["step_index"]): e for e in a_events[:n] if e["ph"] == "X" and e["cat"] == "step"}
    want = {(d["rank"], d["step_index"], d["view"]): d["label"] for d in diagnoses
            if d["label"] in ("abnormal", "insufficient_evidence")}
    got = {}
    for e in slices:
        if e["name"] in ("abnormal", "insufficient evidence"):
            a = e["args"]
            got[(a["rank"], a["step_index"], a["view"])] = a["label"]
            step = step_slices[(a["rank"], a["step_index"])]
            if (e["ts"], e["dur"]) != (step["ts"], step["dur"]):
                fail(f"unit slice {a['rank']}/{a['step_index']} does not span its step: {e['ts']}+{e['dur']} vs {step['ts']}+{step['dur']}")
            if e["name"] == "abnormal" and not a.get("faulty"):
                fail(f"abnormal unit without faulty operators: {a}")
    if got != want:
        fail(f"unit slices differ from diagnosis.jsonl: {len(got)} vs {len(want)}")
    if "abnormal" not in want.values():
        fail("the synthetic run has no abnormal unit: nothing tested")
    # Verdicts on step slices.
    for (rank, step, view), label in {(d["rank"], d["step_index"], d["view"]): d["label"] for d in diagnoses}.items():
        args = next(e for e in a_events[:n] if e["ph"] == "X" and e["cat"] == "step" and e["pid"] == rank
                    and e["args"]["step_index"] == step)["args"]
        if args.get("verdict_" + view) != label:
            fail(f"step {rank}/{step} verdict_{view} = {args.get('verdict_' + view)}, want {label}")
    # Flows: paired, from an operator slice of the marker's family and times, bound in order.
    outs, ins = {}, {}
    for i, e in enumerate(a_events):
        if e.get("bind_id", 0) >= OVERLAY_FLOW_BASE:
            side = outs if e.get("flow_out") else ins if e.get("flow_in") else None
            if side is None or e["bind_id"] in side:
                fail(f"bad or repeated overlay flow: {e}")
            side[e["bind_id"]] = (i, e)
    if set(outs) != set(ins) or not outs:
        fail(f"overlay flows unpaired: {len(outs)} out, {len(ins)} in")
    for fid, (i, op) in outs.items():
        j, marker = ins[fid]
        if op["cat"] not in OPERATORS or op["name"] not in families:
            fail(f"flow {fid} starts at a non-operator slice {op['name']}")
        if marker["name"] != "faulty " + op["name"] or (op["ts"], op["dur"]) != (marker["ts"], marker["dur"]):
            fail(f"flow {fid}: marker {marker['name']} {marker['ts']} does not match {op['name']} {op['ts']}")
        if marker["args"]["family"] != op["name"] or op["pid"] != next(
                d["rank"] for d in diagnoses if d["step_index"] == marker["args"]["step_index"]
                and d["view"] == marker["args"]["view"] and d["rank"] == op["pid"]):
            fail(f"flow {fid}: operator on the wrong rank")
        if not sort_key(i, op) < sort_key(j, marker):
            fail(f"flow {fid}: the marker sorts before its operator slice (Perfetto would drop the arrow)")
    # Every marker is linked, or its args say why not.
    for e in slices:
        if e["name"].startswith("faulty ") and not e.get("flow_in") and not e["args"].get("no_flow"):
            fail(f"marker without a flow and without a reason: {e}")
    # diagnosis.jsonl gives each unit's time in the trace: its step slice's.
    for d in diagnoses:
        step = step_slices[(d["rank"], d["step_index"])]
        if abs(d.get("trace_start_us", -1) - step["ts"]) > 1e-3 or abs(d["trace_end_us"] - step["ts"] - step["dur"]) > 1e-3:
            fail(f"diagnosis.jsonl trace time {d.get('trace_start_us')} - {d.get('trace_end_us')} is not its step slice's "
                 f"{step['ts']} + {step['dur']}")
    return len(outs)


def check_tracks(merged):
    """Step slices on each process's "steps" track; every track named and given a sort index."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in merged["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    order = {(e["pid"], e["tid"]): e["args"]["sort_index"] for e in merged["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_sort_index"}
    if set(names) != set(order):
        fail(f"tracks without a sort index: {sorted(set(names) ^ set(order))[:5]}")
    used = {(e["pid"], e["tid"]) for e in merged["traceEvents"] if e["ph"] == "X"}
    if used - set(names):
        fail(f"slices on unnamed tracks: {sorted(used - set(names))[:5]}")
    for e in merged["traceEvents"]:
        if e["ph"] == "X" and (e["cat"] == "step") != (names[(e["pid"], e["tid"])] == "steps"):
            fail(f"a {e['cat']} slice on track {names[(e['pid'], e['tid'])]!r}: steps and only steps go on 'steps'")
    for pid in {p for p, _ in names}:
        mine = sorted((order[k], names[k]) for k in names if k[0] == pid)
        if mine[0][1] != "steps" or not any(n.startswith("main thread ") for _, n in mine):
            fail(f"rank {pid}: tracks in the order {[n for _, n in mine]}: steps first, then the main thread")


def main():
    ap = argparse.ArgumentParser()
    for a in ("diag", "synth", "merge", "schema", "work"):
        ap.add_argument("--" + a, required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    with open(a.schema) as f:
        schema = jsonschema.Draft202012Validator(json.load(f))
    raw, merged, out = (os.path.join(a.work, d) for d in ("raw", "merged", "out"))
    run([a.synth, "--preset", "small", "--seed", "3", "--out", raw])
    dumps = sorted(glob.glob(os.path.join(raw, "truffld-*.jsonl*")))
    run([a.merge, *dumps, "-o", merged, "-q"])
    # A planted link where diagnosis.trace.json goes is replaced, never followed.
    os.makedirs(out)
    victim = os.path.join(a.work, "victim")
    with open(victim, "w") as f:
        f.write("keep")
    os.symlink(victim, os.path.join(out, "diagnosis.trace.json"))
    run([a.diag, merged, "-o", out, "--llm", "off", "-q"])
    if open(victim).read() != "keep" or os.path.islink(os.path.join(out, "diagnosis.trace.json")):
        fail("the planted symlink was followed")

    m = load_lines(os.path.join(merged, "trace.json"))
    t = load_lines(os.path.join(out, "diagnosis.trace.json"))
    for doc, name in ((m, "trace.json"), (t, "diagnosis.trace.json")):
        errs = list(schema.iter_errors(doc))
        if errs:
            fail(f"{name}: {errs[0].message[:300]} at {list(errs[0].absolute_path)[:4]}")
    families = operator_families(os.path.join(merged, "trees.jsonl"))
    check_merge_trace(m, families)
    check_tracks(m)
    with open(os.path.join(out, "diagnosis.jsonl")) as f:
        diagnoses = [json.loads(l) for l in f]
    flows = check_annotated(m, t, diagnoses, families)
    with open(os.path.join(out, "stats.json")) as f:
        st = json.load(f)["trace"]
    if st["flows"] != flows or st["markers_unlinked"] != 0 or st["markers"] != flows + st["markers_replayed"] + st["markers_outside"]:
        fail(f"stats.json trace counters disagree: {st} vs {flows} flows")

    # Refusals and removals.
    _, err = run([a.diag, merged, "-o", os.path.join(a.work, "again"), "--llm", "off", "-q",
                  "--trace", os.path.join(out, "diagnosis.trace.json")], expect_rc=1)
    if b"already annotated" not in err:
        fail("an annotated --trace was not refused with a reason: " + err.decode())
    run([a.diag, merged, "-o", out, "--llm", "off", "-q", "--no-trace"])
    if os.path.lexists(os.path.join(out, "diagnosis.trace.json")):
        fail("--no-trace left the earlier diagnosis.trace.json")
    bare = os.path.join(a.work, "bare")
    run([a.merge, *dumps, "-o", bare, "-q", "--no-trace-json"])
    _, err = run([a.diag, bare, "-o", os.path.join(a.work, "bare_out"), "--llm", "off"])
    if os.path.exists(os.path.join(a.work, "bare_out", "diagnosis.trace.json")) or b"trace.json" not in err:
        fail("without trace.json: a copy was written or no note said why")
    print(f"trace overlay: {len(t['traceEvents']) - len(m['traceEvents'])} overlay events, {flows} flows, "
          f"{len(families)} operator families named")


if __name__ == "__main__":
    main()
