"""The fleet reduce: which replicas are slower than the others serving similar work.

A slow node is invisible from inside its replica (every TP peer, layer and earlier step shares
it), so it is judged against other replicas. Input: every replica's step_features.jsonl lines.
The compared unit is a replica, or, for a replica over several hosts (pipeline stages), each of
its hosts against the same stage of other replicas (by device time only: a stage's step time
includes waiting for the others). Per unit and step (its TP ranks averaged), each compared cost -- the step time and each
operator family's device time -- is divided by its tokens (per-token cost) and compared with the
median per-token cost of the nearest steps of the same phase in *other* replicas of its pool
(tokens and context within a small log distance): a ratio per step. A pool (the rows' "pool":
same model, configuration and GPU type) is the only set of peers: a GPU type legitimately slower
than another is never compared with it. A replica is slow in a cost when the median of its log
ratios lies above its pool's centre (the median over the pool's replicas) by more than both `z`
robust spreads (1.4826 MAD over the pool's replicas: the false-alarm calibration pooled over
replicas of the same model, configuration and GPU type) and log(min_ratio), and at least
`min_share` of its steps are slower than their peers (by at least half of min_ratio); a pool of
fewer than 3 judged replicas is not judged. The same test per time window finds replicas slow for a while. A healthy fleet's replicas
differ by noise alone, far below min_ratio, so it raises nothing.
What a finding costs: per compared step, the cost minus its expected value (the cost over its
ratio), in ns and as a share of the unit's step time; a finding gives each cost's median over its
steps, and in total the step time's (or, where the step time is not compared or not slower, the
sum over the slower operator families': device work of one stage or rank delays its whole
replica's step by about that much when it lies on the step's critical path).
Pure logic: dicts in, findings and heat-map data out. Not thread-safe (plain data).
"""
import bisect
import math
import statistics

from plan import natural_key

STEP_TIME = "(step time)"


class Options:
    def __init__(self, min_ratio=1.08, z=4.0, min_share=0.8, min_steps=4, neighbours=8,
                 max_distance=0.35, windows=8, min_window_steps=4):
        self.min_ratio = min_ratio          # smallest slowdown reported (1.08 = 8%)
        self.z = z                          # robust spreads above the fleet centre
        self.min_share = min_share          # share of steps slower than their peers
        self.min_steps = min_steps          # compared steps a replica needs to be judged
        self.neighbours = neighbours        # peer steps per expectation
        self.max_distance = max_distance    # |d log tokens| + 0.5 |d log context|
        self.windows = windows              # time windows of the heat map and window test
        self.min_window_steps = min_window_steps


def _units(rows):
    """{(replica, host): (unit name, slot)}: a replica on one host is one unit named by the
    replica; a replica over hosts (pipeline stages) is one unit per host ("2/node4"), its slot the
    host's place in the replica by lowest rank, so each stage is compared with the same stage of
    other replicas."""
    first = {}
    for r in rows:
        key = (str(r.get("replica")), r.get("host", ""))
        rank = r.get("rank") if r.get("rank") is not None else 1 << 62
        first[key] = min(first.get(key, rank), rank)
    by_rep = {}
    for (rep, host), rank in first.items():
        by_rep.setdefault(rep, []).append((rank, host))
    out = {}
    for rep, hosts in by_rep.items():
        hosts.sort()
        for slot, (_, host) in enumerate(hosts):
            out[(rep, host)] = (rep if len(hosts) == 1 else "%s/%s" % (rep, host), slot)
    return out


def aggregate(rows):
    """Per (unit, step_index): the mean over its ranks of every cost, one workload."""
    units = _units(rows)
    groups = {}
    for r in rows:
        key = (str(r.get("replica")), r.get("host", ""), r["step_index"])
        groups.setdefault(key, []).append(r)
    steps = []
    for (rep, host, idx), rs in sorted(groups.items(), key=lambda kv: (natural_key(kv[0][0]), kv[0][1], kv[0][2])):
        first = rs[0]
        tokens = first.get("tokens")
        if tokens is None or tokens <= 0:
            tokens = max(1, first.get("batch") or 1)
        unit, slot = units[(rep, host)]
        # A pipeline stage's step time includes waiting for the other stages: only a whole
        # replica's is compared; its hosts are compared by their operators' device time.
        step_ns = statistics.fmean(r["step_ns"] for r in rs)
        costs = {STEP_TIME: step_ns} if unit == rep else {}
        fam = {}
        for r in rs:
            for f in r.get("families", []):
                if f.get("metric") == "device":
                    fam.setdefault(f["family"], []).append(f["observed_ns"])
        for name, v in fam.items():
            if len(v) == len(rs):
                costs[name] = statistics.fmean(v)
        steps.append({"replica": rep, "unit": unit, "slot": slot, "pool": str(first.get("pool") or ""), "step_index": idx,
                      "phase": first.get("phase", "unknown"), "tokens": tokens,
                      "context": max(0, first.get("context") or 0), "start_ns": min(r["start_ns"] for r in rs),
                      "step_ns": step_ns,
                      "hosts": [host], "ranks": sorted(r["rank"] for r in rs if r.get("rank") is not None),
                      "costs": costs, "abnormal": any(r.get("verdict") == "abnormal" for r in rs)})
    return steps


def _ratios_for(steps, metric, o):
    """{step position: (ratio, peer replicas, excess ns, excess share of the step time)} for
    `metric` against other replicas' similar steps (same pool, phase and slot)."""
    by_phase = {}
    for i, s in enumerate(steps):
        v = s["costs"].get(metric)
        if v is None or v <= 0:
            continue
        lt, lc = math.log(s["tokens"]), math.log1p(s["context"])
        by_phase.setdefault((s["pool"], s["phase"], s["slot"]), []).append((lt, lc, v / s["tokens"], s["replica"], i))
    out = {}
    for pts in by_phase.values():
        pts.sort()
        keys = [p[0] for p in pts]
        for lt, lc, per_token, rep, i in pts:
            lo = bisect.bisect_left(keys, lt - o.max_distance)
            hi = bisect.bisect_right(keys, lt + o.max_distance)
            cand = []
            for q in pts[lo:hi]:
                if q[3] == rep:
                    continue
                dist = abs(q[0] - lt) + 0.5 * abs(q[1] - lc)
                if dist <= o.max_distance:
                    cand.append((dist, q[0], q[2], q[3]))
            cand.sort()
            cand = cand[:o.neighbours]
            reps = frozenset(c[3] for c in cand)
            if len(cand) < 3 or len(reps) < 2:
                continue
            ratio = per_token / _expected(cand, lt)
            excess = steps[i]["costs"][metric] * (1 - 1 / ratio)
            step_ns = steps[i].get("step_ns") or 0
            out[i] = (ratio, reps, excess, excess / step_ns if step_ns > 0 else 0.0)
    return out


def _expected(cand, lt):
    """Per-token cost expected at log tokens `lt` from neighbours (dist, log tokens, per-token
    cost, replica): each moved to `lt` along the neighbours' own log-log slope (clipped to
    [-1, 0.5]: per-token cost falls as fixed costs spread, and rises little), then the median."""
    xs = [c[1] for c in cand]
    ys = [math.log(c[2]) for c in cand]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = 0.0
    if sxx > 1e-4:
        slope = max(-1.0, min(0.5, sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx))
    return math.exp(statistics.median(y + slope * (lt - x) for x, y in zip(xs, ys)))


def _robust(values):
    centre = statistics.median(values)
    mad = statistics.median(abs(v - centre) for v in values)
    return centre, 1.4826 * mad


def _judge(per_replica, o):
    """{replica: _summaries tuple} -> {replica: stats} of the slow ones."""
    judged = {r: v for r, v in per_replica.items() if v[1] >= o.min_steps}
    if len(judged) < 3:
        return {}, None
    centre, spread = _robust([v[0] for v in judged.values()])
    threshold = max(o.z * spread, math.log(o.min_ratio))
    slow = {}
    for r, (m, n, up, peers, excess, share) in judged.items():
        if m - centre > threshold and up >= o.min_share * n:
            slow[r] = {"ratio": math.exp(m), "fleet_ratio": math.exp(centre),
                       "threshold_ratio": math.exp(centre + threshold), "steps": n, "steps_slower": up,
                       "peer_replicas": peers, "excess_ns_per_step": int(round(excess)), "step_share": share}
    return slow, (centre, threshold)


def _judge_pools(per_unit, pool_of, o):
    """_judge within each pool: {unit: summary} -> {unit: stats} of the slow ones."""
    pools = {}
    for u, v in per_unit.items():
        pools.setdefault(pool_of[u], {})[u] = v
    slow = {}
    for members in pools.values():
        slow.update(_judge(members, o)[0])
    return slow


def _summaries(entries, margin):
    """[_ratios_for entry] -> (median log ratio, n, n slower (log ratio above `margin`), peer
    replicas in all, median excess ns, median excess share of the step time)."""
    logs = [math.log(e[0]) for e in entries]
    return (statistics.median(logs), len(logs), sum(1 for x in logs if x > margin),
            len(frozenset().union(*(e[1] for e in entries))), statistics.median(e[2] for e in entries),
            statistics.median(e[3] for e in entries))


def compare(steps, o):
    """Per metric, per replica: the steps' ratios in time order, and each step's window."""
    metrics = sorted({m for s in steps for m in s["costs"]})
    t0 = min(s["start_ns"] for s in steps)
    t1 = max(s["start_ns"] for s in steps) + 1
    width = (t1 - t0) / o.windows
    window = [min(o.windows - 1, int((s["start_ns"] - t0) / width)) for s in steps]
    ratios = {m: _ratios_for(steps, m, o) for m in metrics}
    return metrics, ratios, window, (t0, width)


def _label(rep, hosts):
    return "replica %s (host%s %s)" % (rep, "s" if len(hosts) > 1 else "", ", ".join(hosts))


def _metric_phrase(metric, st):
    what = "step time" if metric == STEP_TIME else metric + " device time"
    when = ("in every step" if st["steps_slower"] == st["steps"] else
            "in %d of %d steps" % (st["steps_slower"], st["steps"]))
    return "%s %.2fx per token that of %d other replicas serving similar batches, %s" % (
        what, st["ratio"], st["peer_replicas"], when)


def _cost(flagged):
    """(ns, share) a step the finding costs: the step time's excess when it was compared and found
    slower, else the slower operator families' summed."""
    for m, st in flagged:
        if m == STEP_TIME:
            return st["excess_ns_per_step"], st["step_share"]
    fams = [st for _, st in flagged]
    return sum(st["excess_ns_per_step"] for st in fams), sum(st["step_share"] for st in fams)


def _ms(ns):
    return "%.3g ms" % (ns / 1e6) if abs(ns) >= 1e5 else "%.3g us" % (ns / 1e3)


def _finding(kind, info, flagged, window=None):
    # The step time first, then the costs slower in the most steps, then by ratio.
    flagged = sorted(flagged, key=lambda kv: (kv[0] != STEP_TIME, -kv[1]["steps"], -kv[1]["ratio"]))
    cost_ns, share = _cost(flagged)
    evidence = _label(info["replica"], info["hosts"]) + ": " + "; ".join(_metric_phrase(m, st) for m, st in flagged[:4])
    evidence += "; costing it about %s a step (%.1f%% of its step time) against its peers' pace" % (
        _ms(cost_ns), 100 * share)
    if window:
        evidence += " (from %.3f s to %.3f s of the fleet's time)" % (window["from_s"], window["to_s"])
    f = {"schema": "truffld.fleet/1", "kind": kind, "replica": info["replica"], "hosts": info["hosts"],
         "ranks": info["ranks"], "pool": info["pool"],
         "evidence": evidence, "cost_ns_per_step": int(cost_ns), "cost_share": round(share, 4),
         "metrics": [dict(metric=m, **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in st.items()})
                     for m, st in flagged]}
    if window:
        f["window"] = window
    return f


def _unit_info(steps):
    info = {}
    for s in steps:
        i = info.setdefault(s["unit"], {"replica": s["replica"], "pool": s["pool"], "hosts": set(), "ranks": set(),
                                        "steps": 0, "abnormal_steps": 0})
        i["hosts"].update(s["hosts"])
        i["ranks"].update(s["ranks"])
        i["steps"] += 1
        i["abnormal_steps"] += s["abnormal"]
    return {u: {**v, "hosts": sorted(v["hosts"]), "ranks": sorted(v["ranks"])} for u, v in info.items()}


def _window_findings(steps, metrics, ratios, window, persistent, info, span, o):
    per = {}  # unit -> {window: [(metric, stats)]}
    for m in metrics:
        for w in range(o.windows):
            entries = {}
            for i, rp in ratios[m].items():
                if window[i] == w:
                    entries.setdefault(steps[i]["unit"], []).append(rp)
            summ = {r: _summaries(v, 0.5 * math.log(o.min_ratio)) for r, v in entries.items()}
            wo = Options(**{**o.__dict__, "min_steps": o.min_window_steps})
            slow = _judge_pools(summ, {u: info[u]["pool"] for u in summ}, wo)
            for r, st in slow.items():
                if m not in persistent.get(r, {}):
                    per.setdefault(r, {}).setdefault(w, []).append((m, st))
    out = []
    t0, width = span
    for r in sorted(per, key=natural_key):
        ws = sorted(per[r])
        runs = [[ws[0]]]
        for w in ws[1:]:
            (runs[-1].append(w) if w == runs[-1][-1] + 1 else runs.append([w]))
        for run in runs:
            flagged = {}
            for w in run:
                for m, st in per[r][w]:
                    if m not in flagged or st["ratio"] > flagged[m]["ratio"]:
                        flagged[m] = st
            win = {"start_ns": int(t0 + run[0] * width), "end_ns": int(t0 + (run[-1] + 1) * width),
                   "from_s": round((run[0] * width) / 1e9, 3), "to_s": round(((run[-1] + 1) * width) / 1e9, 3)}
            out.append(_finding("slow_window", info[r], list(flagged.items()), win))
    return out


def heat_map(steps, ratios, window, span, o):
    """Units (replicas, or replica/host) x windows: the median step-time ratio to similar steps of
    other replicas; "replica_of" gives each row's replica."""
    reps = sorted({s["unit"] for s in steps}, key=natural_key)
    replica_of = {s["unit"]: s["replica"] for s in steps}
    cells = {r: [[] for _ in range(o.windows)] for r in reps}
    abnormal = {r: [0] * o.windows for r in reps}
    for i, rp in ratios.get(STEP_TIME, {}).items():
        cells[steps[i]["unit"]][window[i]].append(math.log(rp[0]))
    for i, s in enumerate(steps):
        abnormal[s["unit"]][window[i]] += s["abnormal"]
    t0, width = span
    return {"replicas": reps, "replica_of": [replica_of[r] for r in reps],
            "windows": [[int(t0 + w * width), int(t0 + (w + 1) * width)] for w in range(o.windows)],
            "ratio": [[round(math.exp(statistics.median(c)), 4) if c else None for c in cells[r]] for r in reps],
            "abnormal_steps": [abnormal[r] for r in reps]}


def reduce_fleet(rows, o=None):
    """Findings (persistent, then windowed) and heat-map data from every replica's feature lines."""
    o = o or Options()
    steps = aggregate(rows)
    if not steps:
        return {"findings": [], "heat": None, "replicas": {}}
    info = _unit_info(steps)
    metrics, ratios, window, span = compare(steps, o)
    persistent = {}
    for m in metrics:
        entries = {}
        for i, rp in ratios[m].items():
            entries.setdefault(steps[i]["unit"], []).append(rp)
        slow = _judge_pools({r: _summaries(v, 0.5 * math.log(o.min_ratio)) for r, v in entries.items()},
                            {u: info[u]["pool"] for u in entries}, o)
        for r, st in slow.items():
            persistent.setdefault(r, {})[m] = st
    findings = [_finding("slow_replica", info[u], list(persistent[u].items())) for u in sorted(persistent, key=natural_key)]
    findings += _window_findings(steps, metrics, ratios, window, persistent, info, span, o)
    return {"findings": findings, "heat": heat_map(steps, ratios, window, span, o), "replicas": info}
