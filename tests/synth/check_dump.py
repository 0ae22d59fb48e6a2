#!/usr/bin/python3
"""Independent checks of a truffld-synth output directory.

Re-reads the raw dumps with nothing but the event contract, then:
  1. validates every record against schemas/events.schema.json (Draft 2020-12) and the ledger and
     label lines against schemas/ledger.schema.json / labels.schema.json;
  2. checks the file structure the contract promises: META first, STATS last with matching
     per-type counts, balanced push/pop per thread, every device record's correlation id owned by
     an API call, every graph kernel's node traceable (clone -> captured node -> launching call),
     and that records are not globally time-sorted (the writer flushes per producer);
  3. recomputes the ground-truth labels from the ledger and the events alone, using the rule in
     tools/synth/README.md, and compares them with labels.jsonl (communication: an NCCL kernel
     of the target operator overlapping the entry's window labels its NCCL operator);
  4. checks the ledger's communication scopes: group entries share a group, link entries come in
     pairs naming each other as peer with the same window steps and intensity;
  5. checks that every step range carries the phase tag matching labels.jsonl's phase;
  6. labels by cost: a recomputed (rank, step, view) must carry cost_ns and counterfactual_ns
     (trusted: only the generator can re-simulate the step without its faults); it is absorbed
     (abnormal false, its families under absorbed_faulty) exactly when cost_ns is below
     label_min_cost_share (synth_summary.json) x counterfactual_ns, and the numbers must agree
     with the dump: the step's observed duration is counterfactual_ns + cost_ns (the
     counterfactual starts from the same push), except after a sched_delay, where the cost is
     at most the wait; ledger cost_ns/absorbed agree with the labels. A horizontal label is also
     absorbed when its transfers' added time (transfer_cost_ns, trusted) is below the share.
New classes: host_gap (the window lies inside one step range and overlaps no other range and no
API call of the main thread: label '(host outside operators)'), sched_delay (the window lies
between the previous step's pop and the step's push: label '(between steps)' on the later step),
direct_copy (copies whose runtime call sits directly under the step range, no operator around it:
label '(calls under the step)'; contention on such a copy labels it too), device_starve (the
window lies inside one step range and no kernel, copy or memset of the rank runs in it: label
'(device idle)').
Exit status 0 when everything holds; otherwise prints what differs and exits 1.

Usage: check_dump.py OUTDIR [--schemas DIR] [--max-validate N]
"""
import argparse
import collections
import glob
import json
import os
import re
import sys


def load_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def unit_kind(rec):
    name = rec["name"]
    if name.startswith("step_execute_model["):
        return "step"
    if rec.get("domain") == "NCCL" or name.startswith("nccl:"):  # NCCL's own ranges, the hooks' ones
        return "comm"
    if name.startswith("torch.nn.functional."):
        return "frontend"
    return "backend"


def family(name, kind):
    if kind == "comm":  # "ncclAllReduce", "nccl:send, bytes=..., world_size=2" -> text before " " or ","
        return name.replace(",", " ").split(" ", 1)[0]
    if kind == "frontend":
        return name.split(" ", 1)[0]
    return name.split(", ", 1)[0]


class Dump:
    """One rank's events, reconstructed: ranges, API ownership, graph nodes."""

    def __init__(self, path, errors):
        self.path = path
        self.records = load_jsonl(path)
        self.errors = errors
        meta = self.records[0]
        if meta.get("type") != "META":
            errors.append(f"{path}:1: first record is not META")
        if self.records[-1].get("type") != "STATS":
            errors.append(f"{path}: last record is not STATS")
        self.rank = meta.get("rank")
        self.host = meta.get("host")
        self.local_rank = meta.get("local_rank")
        self.ranges = []          # dicts: name, kind, family, start, end, parent, step
        self.steps = []           # indices into ranges, time order
        self.api = {}             # corr -> (unit range index or None, step ordinal or None, name)
        self.graph_nodes = {}     # node id -> record
        self.device = []          # KERNEL / MEMCPY / MEMSET records
        self.direct = {}          # corr -> step ordinal of API calls directly under a step range
        self.main_api = []        # (start, end) of the main thread's API calls
        self.main_tid = meta.get("process_id")
        self._build()

    def _build(self):
        counts = collections.Counter(r["type"] for r in self.records[:-1])
        written = self.records[-1].get("records_written", {})
        if isinstance(written, dict):
            for k, v in written.items():
                if counts.get(k, 0) != v:
                    self.errors.append(f"{self.path}: STATS says {v} {k}, file has {counts.get(k, 0)}")
        stacks = collections.defaultdict(list)
        ts_seen = []
        for line_no, r in enumerate(self.records, 1):
            t = r["type"]
            if t == "NVTX_PUSH":
                tid = r["thread_id"]
                kind = unit_kind(r)
                idx = len(self.ranges)
                parent = stacks[tid][-1] if stacks[tid] else None
                self.ranges.append({"name": r["name"], "kind": kind, "family": family(r["name"], kind),
                                    "start": r["timestamp"], "end": None, "parent": parent, "step": None,
                                    "tid": tid})
                if kind == "step":
                    self.steps.append(idx)
                    self.ranges[idx]["step"] = len(self.steps) - 1
                elif parent is not None:
                    self.ranges[idx]["step"] = self.ranges[parent]["step"]
                stacks[tid].append(idx)
                ts_seen.append(r["timestamp"])
            elif t == "NVTX_POP":
                tid = r["thread_id"]
                if not stacks[tid]:
                    self.errors.append(f"{self.path}:{line_no}: NVTX_POP with no open range")
                    continue
                self.ranges[stacks[tid].pop()]["end"] = r["timestamp"]
            elif t in ("RUNTIME", "DRIVER"):
                stack = stacks[r["thread_id"]]
                unit = next((i for i in reversed(stack) if self.ranges[i]["kind"] in ("backend", "comm")), None)
                step = self.ranges[stack[0]]["step"] if stack and self.ranges[stack[0]]["kind"] == "step" else None
                if r["correlation_id"] in self.api:
                    self.errors.append(f"{self.path}:{line_no}: correlation id {r['correlation_id']} reused")
                self.api[r["correlation_id"]] = (unit, step, r["name"])
                if stack and self.ranges[stack[-1]]["kind"] == "step":
                    self.direct[r["correlation_id"]] = self.ranges[stack[-1]]["step"]
                if r["thread_id"] == self.main_tid:
                    self.main_api.append((r["start"], r["end"]))
                ts_seen.append(r["start"])
            elif t == "GRAPH_NODE":
                self.graph_nodes[r["graph_node_id"]] = r
            elif t in ("KERNEL", "MEMCPY", "MEMSET"):
                self.device.append(r)
                ts_seen.append(r["gpu_start"])
        for tid, st in stacks.items():
            if st:
                self.errors.append(f"{self.path}: thread {tid} ends with {len(st)} open ranges")
        if ts_seen == sorted(ts_seen):
            self.errors.append(f"{self.path}: records are globally time-sorted; a real writer's are not")
        # Steps are numbered in time order (they are pushed in time order on one thread).
        starts = [self.ranges[i]["start"] for i in self.steps]
        if starts != sorted(starts):
            self.errors.append(f"{self.path}: step ranges not pushed in time order")

    def _transfers(self, fam, step):
        """Device records of `fam` transfers launched in `step`, in GPU start order (cached)."""
        key = (fam, step)
        cache = self.__dict__.setdefault("_transfer_cache", {})
        if key not in cache:
            recs = []
            for r in self.device:
                if r["type"] != "KERNEL":
                    continue
                u, st = self.owner(r)
                if st == step and u is not None and self.ranges[u]["family"] == fam:
                    recs.append((r["gpu_start"], id(r), u))
            cache[key] = sorted(recs)
        return cache[key]

    def step_identity(self, step):
        """(request-id part of the step name, how many earlier steps had that same name): the
        stages of one pipeline replica run the same logical step under the same name."""
        name = self.ranges[self.steps[step]]["name"].split("[phase:")[0]
        j = sum(1 for s in self.steps[:step] if self.ranges[s]["name"].split("[phase:")[0] == name)
        return name, j

    def step_with_identity(self, name, j):
        for s, idx in enumerate(self.steps):
            if self.ranges[idx]["name"].split("[phase:")[0] == name:
                if j == 0:
                    return s
                j -= 1
        return None

    def transfer_ordinal(self, rec, fam, step):
        return next(i for i, (_, rid, _) in enumerate(self._transfers(fam, step)) if rid == id(rec))

    def nth_transfer(self, fam, step, k):
        recs = self._transfers(fam, step)
        return recs[k][2] if k < len(recs) else None

    def owner(self, rec):
        """(unit range index, step ordinal) of a device record, following graph nodes."""
        corr = rec["correlation_id"]
        if corr not in self.api:
            self.errors.append(f"{self.path}: device record with unknown correlation id {corr}")
            return None, None
        unit, step, api_name = self.api[corr]
        if "graph_id" in rec:
            node = self.graph_nodes.get(rec["graph_node_id"])
            if node is None or node["graph_id"] != rec["graph_id"]:
                self.errors.append(f"{self.path}: kernel graph node {rec['graph_node_id']} has no GRAPH_NODE")
                return None, step
            while "original_graph_node_id" in node:
                node = self.graph_nodes[node["original_graph_node_id"]]
            unit = self.api[node["correlation_id"]][0]
            if not api_name.startswith("cudaGraphLaunch"):
                self.errors.append(f"{self.path}: graph kernel launched by {api_name}")
        return unit, step


HOST_OUTSIDE = "(host outside operators)"
BETWEEN_STEPS = "(between steps)"
CALLS_UNDER_STEP = "(calls under the step)"
DEVICE_IDLE = "(device idle)"


def recompute_labels(dumps, ledger, errors):
    """{(rank, step, view): (set(families), set(fault ids))} from the ledger and events."""
    out = collections.defaultdict(lambda: (set(), set()))

    def add_pseudo(d, step, fam, fid):
        fams, ids = out[(d.rank, step, "vertical")]
        fams.add(fam)
        ids.add(fid)

    def add(d, unit, step, fid):
        if unit is None or step is None:
            return
        u = d.ranges[unit]
        view = "horizontal" if u["kind"] == "comm" else "vertical"
        fams, ids = out[(d.rank, step, view)]
        fams.add(u["family"])
        ids.add(fid)

    by_rank = {d.rank: d for d in dumps}
    shared = []  # (dump, device record, comm unit, step, fault id) of slowed transfers
    for e in ledger:
        if not e["sufficient"]:
            continue
        d = by_rank[e["rank"]]
        lo, hi = e["start"], e["end"]
        cls = e["class"]
        if cls == "host_gap":
            if lo >= hi:
                continue
            steps = [d.ranges[i]["step"] for i in d.steps if d.ranges[i]["start"] <= lo and hi <= d.ranges[i]["end"]]
            if len(steps) != 1:
                errors.append(f"ledger {e['id']}: host_gap window is not inside one step range")
                continue
            inside = [r["name"][:40] for r in d.ranges if r["kind"] != "step" and r["tid"] == d.main_tid
                      and r["start"] < hi and r["end"] > lo]
            calls = [c for c in d.main_api if c[0] < hi and c[1] > lo]
            if inside or calls:
                errors.append(f"ledger {e['id']}: host_gap window overlaps {inside[:2]} / {len(calls)} API calls")
                continue
            add_pseudo(d, steps[0], HOST_OUTSIDE, e["id"])
        elif cls == "device_starve":
            if lo >= hi:
                continue
            steps = [d.ranges[i]["step"] for i in d.steps if d.ranges[i]["start"] <= lo and hi <= d.ranges[i]["end"]]
            busy = [r for r in d.device if r["gpu_start"] < hi and r["gpu_end"] > lo]
            if len(steps) != 1 or busy:
                errors.append(f"ledger {e['id']}: device_starve window is not an idle stretch of one step "
                              f"({len(steps)} steps, {len(busy)} device records inside)")
                continue
            add_pseudo(d, steps[0], DEVICE_IDLE, e["id"])
        elif cls == "sched_delay":
            later = [k for k, i in enumerate(d.steps) if d.ranges[i]["start"] >= hi]
            if not later or d.ranges[d.steps[later[0]]]["start"] != hi or later[0] == 0 \
                    or d.ranges[d.steps[later[0] - 1]]["end"] > lo or lo >= hi:
                errors.append(f"ledger {e['id']}: sched_delay window [{lo}, {hi}) is not a wait before a step push")
                continue
            if e["first_step"] != later[0]:
                errors.append(f"ledger {e['id']}: sched_delay first_step {e['first_step']}, window before step {later[0]}")
            add_pseudo(d, later[0], BETWEEN_STEPS, e["id"])
        elif cls == "direct_copy":
            for rec in d.device:
                if rec["type"] == "MEMCPY" and rec["correlation_id"] in d.direct and lo <= rec["gpu_start"] < hi:
                    add_pseudo(d, d.direct[rec["correlation_id"]], CALLS_UNDER_STEP, e["id"])
        elif cls == "software":
            for i, r in enumerate(d.ranges):
                if r["kind"] == "backend" and r["family"] == e["target"] and lo <= r["start"] < hi:
                    add(d, i, r["step"], e["id"])
        elif cls == "engine":
            hits = [i for i, r in enumerate(d.ranges)
                    if r["kind"] == "backend" and r["start"] < hi and r["end"] > lo]
            parents = {d.ranges[i]["parent"] for i in hits}
            for i in hits:
                if i not in parents:
                    add(d, i, d.ranges[i]["step"], e["id"])
        else:
            for rec in d.device:
                if cls == "communication":
                    if not (rec["gpu_start"] < hi and rec["gpu_end"] > lo):  # the segment overlaps
                        continue
                elif not lo <= rec["gpu_start"] < hi:
                    continue
                t = rec["type"]
                if cls == "cuda_kernel" and not (t == "KERNEL" and e["kernel_pattern"] in rec["name"]):
                    continue
                if cls == "memcpy" and t != "MEMCPY":
                    continue
                unit, step = d.owner(rec)
                if unit is None:
                    if cls == "contention" and rec["correlation_id"] in d.direct:
                        add_pseudo(d, d.direct[rec["correlation_id"]], CALLS_UNDER_STEP, e["id"])
                    continue
                if cls == "communication" and d.ranges[unit]["family"] != e["target"]:
                    continue
                if cls == "cuda_kernel" and d.ranges[unit]["kind"] == "comm":
                    continue
                add(d, unit, step, e["id"])
                if d.ranges[unit]["kind"] == "comm":
                    shared.append((d, rec, unit, step, e["id"]))
    for d, rec, unit, step, fid in shared:
        for pd, punit, pstep in transfer_partners(dumps, d, rec, unit, step):
            add(pd, punit, pstep, fid)
    return out


def transfer_partners(dumps, d, rec, unit, step):
    """The other sides of a slowed transfer, which the slowdown reaches too (tools/synth/README.md):
    for a collective, the NCCL kernels of the same operator ending at the same instant on the
    other ranks of the host (one host = one TP group, one clock); for a pipeline send (recv), the
    k-th recv (send) of the same step (same request ids) on the rank with the same local index
    on another host, k being the kernel's ordinal among its rank's transfers of that kind."""
    fam = d.ranges[unit]["family"]
    out = []
    if fam not in ("nccl:send", "nccl:recv"):
        for o in dumps:
            if o is d or o.host != d.host:
                continue
            for r in o.device:
                if r["type"] == "KERNEL" and r["gpu_end"] == rec["gpu_end"]:
                    ou, ost = o.owner(r)
                    if ou is not None and o.ranges[ou]["family"] == fam:
                        out.append((o, ou, ost))
        return out
    other = "nccl:recv" if fam == "nccl:send" else "nccl:send"
    name, j = d.step_identity(step)
    k = d.transfer_ordinal(rec, fam, step)
    for o in dumps:
        if o.host == d.host or o.local_rank != d.local_rank:
            continue
        ostep = o.step_with_identity(name, j)
        hit = None if ostep is None else o.nth_transfer(other, ostep, k)
        if hit is not None:
            out.append((o, hit, ostep))
    return out


def check_comm_scopes(ledger, errors):
    """Scope fields of communication entries and the pairing of link entries."""
    by_key = {}
    for e in ledger:
        if e["class"] != "communication":
            continue
        scope = e.get("scope")
        if scope not in ("group", "rank", "link"):
            errors.append(f"ledger {e['id']}: communication entry with scope {scope!r}")
        if scope == "group" and not e.get("group"):
            errors.append(f"ledger {e['id']}: group scope without a group")
        if scope == "link":
            by_key[(e["rank"], e.get("peer"), e["first_step"])] = e
    for (rank, peer, first), e in by_key.items():
        other = by_key.get((peer, rank, first))
        if other is None or other["intensity"] != e["intensity"] or other["last_step"] != e["last_step"]:
            errors.append(f"ledger {e['id']}: link {rank}-{peer} has no matching entry on rank {peer}")
        elif {e["target"], other["target"]} not in ({e["target"]}, {"nccl:send", "nccl:recv"}):
            errors.append(f"ledger {e['id']}: link targets {e['target']} / {other['target']}")


def check_phase_tags(dumps, labels, errors):
    """A step name's [phase:X] tag, when it has one (runs with --no-phase-tags have none), is the
    phase labels.jsonl gives the step; [tokens:N] and [ctx:N], when present, are integers."""
    phase = {(lab["rank"], lab["step_index"]): lab.get("phase") for lab in labels}
    for d in dumps:
        for s, idx in enumerate(d.steps):
            name = d.ranges[idx]["name"]
            want = phase.get((d.rank, s))
            tags = dict(re.findall(r"\[(phase|tokens|ctx):([^\]]*)\]", name.split("]", 1)[-1]))
            bad = "phase" in tags and tags["phase"] != want
            bad = bad or any(k in tags and not tags[k].isdigit() for k in ("tokens", "ctx"))
            if bad:
                errors.append(f"{d.path}: step {s} named {name[-60:]!r}, expected [phase:{want}] and numeric tags")
                return


def validate(records, validator, where, limit, errors):
    chosen = list(enumerate(records[:limit]))
    if len(records) > limit:  # always include the closing STATS record
        chosen.append((len(records) - 1, records[-1]))
    for i, r in chosen:
        for err in validator.iter_errors(r):
            errors.append(f"{where}: record {i + 1}: {err.message}")
            break
        if len(errors) > 50:
            return


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--schemas", default=os.path.join(root, "schemas"))
    ap.add_argument("--max-validate", type=int, default=10 ** 9, help="records validated per file")
    args = ap.parse_args()

    errors = []
    files = sorted(glob.glob(os.path.join(args.outdir, "truffld-*.jsonl")))
    if not files:
        print(f"check_dump: no truffld-*.jsonl in {args.outdir}")
        return 1
    dumps = [Dump(f, errors) for f in files]
    ledger = load_jsonl(os.path.join(args.outdir, "ledger.jsonl"))
    labels = load_jsonl(os.path.join(args.outdir, "labels.jsonl"))

    try:
        from jsonschema import Draft202012Validator
    except ImportError:
        print("check_dump: python3-jsonschema missing (run with /usr/bin/python3)")
        return 1
    for name, recs in [("events", None), ("ledger", ledger), ("labels", labels)]:
        path = os.path.join(args.schemas, f"{name}.schema.json")
        if not os.path.exists(path):
            errors.append(f"{path} missing")
            continue
        v = Draft202012Validator(json.load(open(path)))
        if recs is None:
            for d in dumps:
                validate(d.records, v, d.path, args.max_validate, errors)
        else:
            validate(recs, v, name, len(recs), errors)

    check_comm_scopes(ledger, errors)
    check_phase_tags(dumps, labels, errors)
    truth = recompute_labels(dumps, ledger, errors)
    share = 0.01
    summary_path = os.path.join(args.outdir, "synth_summary.json")
    if os.path.exists(summary_path):
        share = json.load(open(summary_path)).get("label_min_cost_share", 0.01)
    by_rank = {d.rank: d for d in dumps}
    sched_steps = {(e["rank"], e["first_step"]) for e in ledger if e["class"] == "sched_delay" and e["sufficient"]}
    given = {}
    for lab in labels:
        given[(lab["rank"], lab["step_index"], lab["view"])] = lab
    step_counts = {d.rank: len(d.steps) for d in dumps}
    for (rank, n) in step_counts.items():
        for s in range(n):
            for view in ("vertical", "horizontal"):
                if (rank, s, view) not in given:
                    errors.append(f"labels.jsonl: no line for rank {rank} step {s} {view}")
    mismatches = 0
    absorbed_n = 0
    kept_ids, absorbed_ids = set(), set()
    for key, lab in given.items():
        fams, ids = truth.get(key, (set(), set()))
        bad = None
        if fams:
            cost, cf = lab.get("cost_ns"), lab.get("counterfactual_ns")
            if cost is None or cf is None:
                bad = "no cost_ns / counterfactual_ns"
            else:
                d = by_rank[key[0]]
                step = d.ranges[d.steps[key[1]]]
                observed = step["end"] - step["start"]
                if (key[0], key[1]) in sched_steps:
                    if cost < 0:
                        bad = f"negative cost {cost}"
                elif observed != cf + cost:
                    bad = f"step lasted {observed} ns, not counterfactual {cf} + cost {cost}"
                absorbed = cost < share * cf
                if key[2] == "horizontal":  # its transfers' own added time must pass the share too
                    tc = lab.get("transfer_cost_ns")
                    if tc is None or tc < 0:
                        bad = bad or "no transfer_cost_ns on a horizontal label"
                    else:
                        absorbed = absorbed or min(cost, tc) < share * cf
                if bool(lab.get("absorbed", False)) != absorbed:
                    bad = bad or f"absorbed={lab.get('absorbed', False)} but cost {cost} vs {share} x {cf}"
                elif absorbed:
                    absorbed_n += 1
                    absorbed_ids |= set(lab.get("absorbed_fault_ids", []))
                    if lab["abnormal"] or lab["faulty"] or set(lab.get("absorbed_faulty", [])) != fams \
                            or not set(lab.get("absorbed_fault_ids", [])) <= ids:
                        bad = f"absorbed label {lab['faulty']} {lab.get('absorbed_faulty')}, recomputed {sorted(fams)}"
                elif set(lab["faulty"]) != fams or not lab["abnormal"] or not set(lab["fault_ids"]) <= ids:
                    bad = "faulty differs"
                else:
                    kept_ids |= set(lab["fault_ids"])
        elif lab["abnormal"] or lab["faulty"] or lab.get("absorbed"):
            bad = "abnormal without a recomputed fault"
        if bad:
            mismatches += 1
            if mismatches <= 10:
                errors.append(f"label mismatch at rank {key[0]} step {key[1]} {key[2]}: {bad}: labels.jsonl says "
                              f"{lab['faulty']} {lab['fault_ids']}, recomputed {sorted(fams)} {sorted(ids)}")
    for e in ledger:
        if "absorbed" not in e:
            continue
        if e["absorbed"] != (e["id"] in absorbed_ids and e["id"] not in kept_ids):
            errors.append(f"ledger {e['id']}: absorbed={e['absorbed']} disagrees with labels.jsonl")
    for key in truth:
        if key not in given:
            errors.append(f"recomputed label for {key} has no line in labels.jsonl")
    abnormal = sum(1 for lab in labels if lab["abnormal"])
    print(f"check_dump: {len(dumps)} dumps, {sum(len(d.records) for d in dumps)} records, "
          f"{sum(step_counts.values())} rank-steps, {len(ledger)} faults, {abnormal} abnormal (rank, step, view) labels, "
          f"{absorbed_n} absorbed, {mismatches} label mismatches")
    for e in errors[:60]:
        print("  " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
