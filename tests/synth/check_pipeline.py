#!/usr/bin/python3
"""Pipeline stages across hosts and per-rank / per-link communication faults in truffld-synth.

Generates pipeline-parallel dumps and checks, from the raw events alone (check_dump's reader):
  placement   rank r runs on host r // TP as TP index r % TP; host h is stage h % PP; every stage
              runs vLLM's share of the layers (one rotary kernel per layer and step), the first
              alone embeds, the last alone samples; every stage runs every step;
  pairing     each step of stage s > 0 starts with two `nccl:recv, bytes=B, world_size=PP,
              impl=pynccl` ranges and each step of stage s < PP-1 ends with two `nccl:send`
              ranges, each around a cuLaunchKernelEx whose ncclDevKernel_SendRecv kernel ends
              at the same reference time (host clock minus the host's offset from
              synth_summary.json) as its peer's, after both started;
  labels      check_dump's independent recomputation, then: a rank- or link-scope fault labels
              only the sides of the transfers it slows (its TP group for a collective, the
              pipeline partner for a send or recv), link ends are labelled alike, pipeline faults
              label nccl:send / nccl:recv in the horizontal view;
  merge       (when built) truffld-merge's horizontal view holds the send/recv operators with
              their kernel under every step of the right stages.
Exit 0 = all hold, 1 = differences (printed), 77 = skipped (no truffld-synth).
"""
import argparse
import collections
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_dump  # noqa: E402


def vllm_split(layers, pp):
    sizes = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        sizes[-i] += 1
    return sizes


def generate(synth, out, args):
    subprocess.run(["rm", "-rf", out], check=True)
    subprocess.run([synth, *args, "-q", "--out", out], check=True)
    errors = []
    dumps = [check_dump.Dump(f, errors) for f in sorted(glob.glob(os.path.join(out, "truffld-*.jsonl")))]
    summary = json.load(open(os.path.join(out, "synth_summary.json")))
    return dumps, summary, errors


def step_units(d):
    """Per step ordinal: list of (range, kernel record or None) for the step's NCCL p2p ranges, and
    the per-step kernel names."""
    by_corr = {}
    for rec in d.device:
        if rec["type"] == "KERNEL":
            by_corr.setdefault(rec["correlation_id"], rec)
    p2p = collections.defaultdict(list)
    kernels = collections.defaultdict(list)
    for rec in d.device:
        if rec["type"] == "KERNEL":
            _, step = d.owner(rec)
            if step is not None:
                kernels[step].append(rec["name"])
    launches = collections.defaultdict(list)
    for corr, (unit, step, name) in d.api.items():
        if unit is not None and d.ranges[unit]["name"].startswith("nccl:"):
            launches[unit].append((corr, name))
    for i, r in enumerate(d.ranges):
        if r["name"].startswith("nccl:"):
            calls = launches.get(i, [])
            kern = by_corr.get(calls[0][0]) if len(calls) == 1 else None
            p2p[r["step"]].append((r, calls, kern))
    for v in p2p.values():
        v.sort(key=lambda x: x[0]["start"])
    return p2p, kernels


def check_topology(dumps, summary, errors, layers):
    tp, pp = summary["tp"], summary["pp"]
    offsets = {h["host"]: h["offset_ns"] for h in summary["hosts_clock"]}
    by_rank = {d.rank: d for d in dumps}
    units = {d.rank: step_units(d) for d in dumps}
    split = vllm_split(layers, pp)
    steps = {len(d.steps) for d in dumps}
    if len(steps) != 1:
        errors.append(f"stages ran different step counts: {sorted(steps)}")
    pairs = 0
    for d in dumps:
        meta = d.records[0]
        host = int(meta["host"][len("node"):])
        stage = host % pp
        if d.rank != host * tp + meta.get("local_rank", -1):
            errors.append(f"rank {d.rank} on {meta['host']} with local_rank {meta.get('local_rank')}")
        p2p, kernels = units[d.rank]
        for s in range(len(d.steps)):
            names = kernels[s]
            rotary = sum("rotary_embedding_kernel" in n for n in names)
            if rotary != split[stage]:
                errors.append(f"rank {d.rank} step {s}: {rotary} layers, stage {stage} should run {split[stage]}")
            if any("indexSelect" in n for n in names) != (stage == 0):
                errors.append(f"rank {d.rank} step {s}: embedding on stage {stage}")
            if any("ArgMaxOps" in n for n in names) != (stage == pp - 1):
                errors.append(f"rank {d.rank} step {s}: sampling on stage {stage}")
            ops = [u[0]["name"].split(",")[0] for u in p2p[s]]
            want = ["nccl:recv"] * 2 * (stage > 0) + ["nccl:send"] * 2 * (stage < pp - 1)
            if ops != want:
                errors.append(f"rank {d.rank} step {s} (stage {stage}): p2p ranges {ops}, expected {want}")
                continue
            for r, calls, kern in p2p[s]:
                fields = dict(kv.split("=", 1) for kv in r["name"].split(", ")[1:])
                if fields.get("world_size") != str(pp) or fields.get("impl") != "pynccl":
                    errors.append(f"rank {d.rank}: p2p range named {r['name']!r}")
                if len(calls) != 1 or calls[0][1] != "cuLaunchKernelEx" or kern is None or \
                        not kern["name"].startswith("ncclDevKernel_SendRecv"):
                    errors.append(f"rank {d.rank} step {s}: {r['name']!r} does not wrap one NCCL launch")
            if stage == pp - 1:
                continue
            peer = by_rank.get(d.rank + tp)
            if peer is None:
                errors.append(f"rank {d.rank}: no next-stage peer rank {d.rank + tp}")
                continue
            sends = [u for u in p2p[s] if u[0]["name"].startswith("nccl:send")]
            recvs = [u for u in units[peer.rank][0][s] if u[0]["name"].startswith("nccl:recv")]
            off_a, off_b = offsets[meta["host"]], offsets[peer.records[0]["host"]]
            for (ra, _, ka), (rb, _, kb) in zip(sends, recvs):
                if ka is None or kb is None:
                    continue
                pairs += 1
                if ra["name"].split(",")[1] != rb["name"].split(",")[1]:
                    errors.append(f"step {s}: {ra['name']!r} paired with {rb['name']!r}")
                end_a, end_b = ka["gpu_end"] - off_a, kb["gpu_end"] - off_b
                if end_a != end_b:
                    errors.append(f"rank {d.rank}->{peer.rank} step {s}: send ends at {end_a}, recv at {end_b} "
                                  f"(reference time)")
                if end_a < max(ka["gpu_start"] - off_a, kb["gpu_start"] - off_b):
                    errors.append(f"rank {d.rank}->{peer.rank} step {s}: transfer ends before both sides started")
    if pp > 1 and pairs == 0:
        errors.append("no send/recv pair found")
    if pp > 1 and len(set(offsets.values())) < 2:
        errors.append("every host has the same clock offset: the test would not see offset mistakes")
    return pairs


def sharing(dumps, e):
    """Ranks that share the transfers of communication fault `e` (see check_scoped_labels)."""
    host = {d.rank: d.host for d in dumps}
    group = sorted(r for r, h in host.items() if h == host[e["rank"]])
    tp = len(group)
    if e["target"] == "nccl:send":
        return {e["rank"], e["rank"] + tp}
    if e["target"] == "nccl:recv":
        return {e["rank"], e["rank"] - tp}
    return set(group)


def check_scoped_labels(dumps, outdir, errors):
    ledger = check_dump.load_jsonl(os.path.join(outdir, "ledger.jsonl"))
    labels = check_dump.load_jsonl(os.path.join(outdir, "labels.jsonl"))
    labelled = collections.defaultdict(set)  # fault id -> ranks it labels
    families = collections.Counter()
    for lab in labels:
        for fid in lab.get("fault_ids", []):
            labelled[fid].add(lab["rank"])
        if lab["view"] == "horizontal":
            families.update(lab["faulty"])
    by_id = {e["id"]: e for e in ledger}
    scopes = collections.Counter()
    for e in ledger:
        if e["class"] != "communication" or not e["sufficient"]:
            continue
        scopes[e["scope"]] += 1
        got = labelled.get(e["id"], set())
        # A slowed transfer is slow on every side that shares it, so the fault labels exactly
        # those sides: its rank's TP group for a collective, the pipeline partner (same TP index
        # on the next or previous stage) for a send or a recv.
        share = sharing(dumps, e)
        if e["scope"] in ("rank", "link") and got - share:
            errors.append(f"{e['scope']}-scope fault {e['id']} on rank {e['rank']} ({e['target']}) labels ranks "
                          f"{sorted(got)}, beyond the sides of its transfer {sorted(share)}")
        if e["scope"] == "link":
            twins = [o for o in ledger if o.get("scope") == "link" and o["rank"] == e["peer"]
                     and o.get("peer") == e["rank"] and o["first_step"] == e["first_step"]]
            if len(twins) != 1 or bool(labelled.get(twins[0]["id"])) != bool(got):
                errors.append(f"link fault {e['id']} ({e['rank']}-{e['peer']}): ends labelled unequally")
    for key in ("nccl:send", "nccl:recv"):
        if families[key] == 0:
            errors.append(f"no horizontal label names {key}")
    return scopes, families


def check_merge_view(merge, dumps, summary, outdir, errors):
    files = sorted(glob.glob(os.path.join(outdir, "truffld-*.jsonl")))
    out = os.path.join(outdir, "merged")
    r = subprocess.run([merge, *files, "-o", out], capture_output=True, text=True)
    if r.returncode != 0:
        errors.append(f"truffld-merge failed: {r.stderr[-500:]}")
        return
    tp, pp = summary["tp"], summary["pp"]
    seen = collections.defaultdict(collections.Counter)
    for line in open(os.path.join(out, "trees.jsonl"), encoding="utf-8"):
        t = json.loads(line)
        if t["view"] != "horizontal":
            continue
        key = (t["rank"], t["step_index"])
        if key in seen and "_done" in seen[key]:
            continue
        seen[key]["_done"] = 1
        for n in walk(t["root"]):
            if n.get("layer") == "comm" and n.get("family", "").startswith("nccl:"):
                if any(k.get("layer") == "kernel" for k in walk(n)):
                    seen[key][n["family"]] += 1
    for d in dumps:
        stage = (d.rank // tp) % pp
        want = {"nccl:recv": 2 * (stage > 0), "nccl:send": 2 * (stage < pp - 1)}
        for s in range(len(d.steps)):
            got = {k: seen[(d.rank, s)].get(k, 0) for k in want}
            if got != want:
                errors.append(f"merge horizontal view, rank {d.rank} step {s}: {got}, expected {want}")
                return


def walk(node):
    yield node
    for ch in node.get("children", []):
        yield from walk(ch)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--synth", required=True)
    ap.add_argument("--merge", default="")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    if not os.path.exists(args.synth):
        print("SKIP: truffld-synth is not built")
        return 77
    errors, report = [], []
    runs = [  # (name, flags, layers)
        ("tp2pp2", ["--preset", "small", "--ranks", "4", "--hosts", "2", "--pp", "2", "--seed", "5"], 4),
        ("tp2pp3-eager", ["--preset", "small", "--ranks", "6", "--hosts", "3", "--pp", "3", "--layers", "7",
                          "--no-cuda-graphs", "--seed", "2"], 7),
        ("tp1pp2x2", ["--preset", "small", "--ranks", "4", "--hosts", "4", "--pp", "2", "--seed", "3"], 4),
    ]
    for name, flags, layers in runs:
        out = os.path.join(args.work, name)
        dumps, summary, errs = generate(args.synth, out, flags)
        errors += [f"{name}: {e}" for e in errs]
        pairs = check_topology(dumps, summary, errs2 := [], layers)
        errors += [f"{name}: {e}" for e in errs2]
        if args.merge and os.path.exists(args.merge):
            errs3 = []
            check_merge_view(args.merge, dumps, summary, out, errs3)
            errors += [f"{name}: {e}" for e in errs3]
        report.append(f"{name}: {len(dumps)} ranks, {pairs} send/recv pairs")
    for scope in ("rank", "link"):
        out = os.path.join(args.work, "comm-" + scope)
        flags = ["--preset", "suite", "--pp", "2", "--faults", "communication", "--comm-scopes", scope,
                 "--intensities", "strong", "--steps", "60", "--seed", "7"]
        dumps, summary, errs = generate(args.synth, out, flags)
        errors += [f"comm-{scope}: {e}" for e in errs]
        r = subprocess.run([sys.executable, check_dump.__file__, out, "--max-validate", "3000"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            errors.append(f"comm-{scope}: check_dump failed:\n{r.stdout[-3000:]}")
        scopes, families = check_scoped_labels(dumps, out, errs4 := [])
        errors += [f"comm-{scope}: {e}" for e in errs4]
        if set(scopes) != {scope}:
            errors.append(f"comm-{scope}: ledger scopes {dict(scopes)}")
        report.append(f"comm-{scope}: {dict(scopes)} entries, horizontal families {dict(families)}")
    print("check_pipeline: " + "; ".join(report) + f"; {len(errors)} problems")
    for e in errors[:40]:
        print("  " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
