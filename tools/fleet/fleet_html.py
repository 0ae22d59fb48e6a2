"""fleet.html: one self-contained page (no network) over the fleet reduce's results.

A replicas x time heat map (each cell: the replica's median step time per token against similar
steps of other replicas in that window; a dot marks windows with steps its own diagnosis found
abnormal), the findings with their evidence, failed shards with their reasons, the replicas from
slowest with what a persistent finding costs each a step, and links to every replica's
report.html. Pure: data in, HTML text out. Thread-safety: reentrant.
"""
import html

STYLE = """body{font:14px sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#f4f4f4}
td.l,th.l{text-align:left}.c{width:44px}.find{background:#fff4f0;border-left:4px solid #d33;padding:6px 10px;margin:6px 0}
.fail{background:#fdecea;border-left:4px solid #900;padding:6px 10px;margin:6px 0}small{color:#666}"""


def _colour(ratio):
    if ratio is None:
        return "#eee"
    x = max(-1.0, min(1.0, (ratio - 1.0) / 0.25))
    if x >= 0:
        return "rgb(255,%d,%d)" % (int(255 - 180 * x), int(255 - 200 * x))
    return "rgb(%d,%d,255)" % (int(255 + 120 * x), int(255 + 80 * x))


def _heat(heat, links):
    if not heat:
        return "<p>No step features to compare.</p>"
    rows = ["<table><tr><th class=l>replica</th>" +
            "".join("<th class=c>w%d</th>" % w for w in range(len(heat["windows"]))) + "</tr>"]
    for unit, rep, ratios, ab in zip(heat["replicas"], heat["replica_of"], heat["ratio"], heat["abnormal_steps"]):
        cells = "".join('<td class=c style="background:%s" title="%s">%s%s</td>' % (
            _colour(r), "no compared step" if r is None else "%.3fx" % r, "" if r is None else "%.2f" % r,
            " &bull;" if a else "") for r, a in zip(ratios, ab))
        rows.append("<tr><td class=l>%s</td>%s</tr>" % (links(rep, unit), cells))
    return "\n".join(rows) + "</table>"


def render(result, shards, bytes_per_rank_step):
    """`result`: reduce_fleet's dict; `shards`: the per-shard result dicts (status, reason, hosts)."""
    info = result.get("replicas", {})
    ok = {s["replica"] for s in shards if s["status"] != "failed"}
    windows = {}  # replica -> its done window shards' K (--window-steps)
    for s in shards:
        if s.get("window") and s["status"] != "failed":
            windows.setdefault(s["replica"], []).append(s["window"][0])

    def links(rep, unit):
        name = html.escape("replica %s" % unit)
        href = html.escape(rep, quote=True)
        if rep not in ok:
            return name
        if rep not in windows:
            return '<a href="replica-%s/report.html">%s</a>' % (href, name)
        return name + " " + " ".join('<a href="replica-%s/window-%d/report.html">w%d</a>' % (href, k, k)
                                     for k in sorted(windows[rep]))

    parts = ["<!doctype html><html><head><meta charset=utf-8><title>truffld fleet</title><style>%s</style></head><body>"
             % STYLE, "<h1>truffld fleet: %d replicas</h1>" % len({s["replica"] for s in shards}),
             "<p><small>%d shards done, %d failed; %.0f bytes of features per rank-step travelled.</small></p>" % (
                 len(ok), len(shards) - len(ok), bytes_per_rank_step)]
    parts.append("<h2>Findings</h2>")
    finds = result.get("findings", [])
    if not finds:
        parts.append("<p>No replica is slower than the others serving similar work.</p>")
    for f in finds:
        parts.append('<div class=find><b>%s</b> %s</div>' % (html.escape(f["kind"]), html.escape(f["evidence"])))
    for s in shards:
        if s["status"] == "failed":
            parts.append("<div class=fail><b>shard failed</b> replica %s (%s): %s</div>" % (
                html.escape(s["replica"]), html.escape(", ".join(s["hosts"])), html.escape(s["reason"])))
    parts.append("<h2>Replicas x time</h2><p><small>Median step time per token over that of similar steps "
                 "in other replicas (red: slower); &bull; steps its own diagnosis found abnormal.</small></p>")
    parts.append(_heat(result.get("heat"), links))
    parts.append("<h2>Slowest replicas</h2><table><tr><th class=l>replica</th><th class=l>hosts</th>"
                 "<th>median over windows of the step time ratio</th><th>a persistent finding costs it a step</th>"
                 "<th>steps</th><th>abnormal steps</th></tr>")
    heat = result.get("heat") or {"replicas": [], "replica_of": [], "ratio": []}
    cost = {(f["replica"], tuple(f["hosts"])): f for f in finds
            if f.get("kind") == "slow_replica" and "cost_ns_per_step" in f}
    overall = []
    for unit, rep, ratios in zip(heat["replicas"], heat["replica_of"], heat["ratio"]):
        vals = sorted(r for r in ratios if r is not None)
        overall.append((vals[len(vals) // 2] if vals else None, unit, rep))
    # Units without a compared step time (a pipeline stage: its step time includes waiting for the
    # other stages, so it is compared by its operators' device time) come last, marked "-".
    def unit_cost(rep, unit):
        f = cost.get((rep, tuple(info.get(unit, {}).get("hosts", []))))
        return f, (f["cost_ns_per_step"] if f else 0)

    for ratio, unit, rep in sorted(overall, key=lambda o: (o[0] is not None, o[0] or 0.0, unit_cost(o[2], o[1])[1]),
                                   reverse=True):
        i = info.get(unit, {"hosts": [], "steps": 0, "abnormal_steps": 0})
        f = unit_cost(rep, unit)[0]
        paid = "%.3g ms (%.1f%%)" % (f["cost_ns_per_step"] / 1e6, 100 * f["cost_share"]) if f else "&ndash;"
        shown = "%.3f" % ratio if ratio is not None else (
            "<span title=\"a pipeline stage: compared by its operators' device time, not its step time\">&ndash;</span>")
        parts.append("<tr><td class=l>%s</td><td class=l>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%d</td></tr>" % (
            links(rep, unit), html.escape(", ".join(i["hosts"])), shown, paid, i["steps"], i["abnormal_steps"]))
    parts.append("</table></body></html>\n")
    return "\n".join(parts)
