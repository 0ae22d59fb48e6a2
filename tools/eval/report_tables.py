"""Markdown sections of BENCHMARKS.md built from the harness's JSON files (results.json,
healthy.json, real.json, cost.json). Each function returns a list of lines; pure, no I/O."""
import statistics
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402
from common import VIEWS  # noqa: E402

PEER, POOLED = "truffld (peer)", "truffld (pooled)"


def f3(x):
    return "–" if x is None else f"{x:.3f}"


def pct(x, nd=1):
    return "–" if x is None else f"{100 * x:.{nd}f}%"


def cell(text, n=240):
    """Table-safe, truncated text."""
    t = " ".join(str(text).split()).replace("|", "\\|")
    return t if len(t) <= n else t[: n - 1] + "…"


def _row(rows, method):
    return next((r for r in rows if r["method"] == method), None)


def summary(res, healthy, real):
    """Real traces first, then healthy synthetic shapes, then the default suite's scores."""
    md = ["## Summary", "", "Real traces: units labelled abnormal; healthy runs: the highest false-alarm rate of any "
          "shape (pooled over its seeds); default suite, held-out test split (step F1 / operator Macro+ F1 / "
          "operator precision).", "",
          "| | vertical | horizontal |", "|---|---|---|"]
    traces = [t for t in (real or {}).get("traces", []) if "counts" in t]
    if traces:
        cells = []
        for v in VIEWS:
            ab = sum(t["counts"][v]["abnormal"] for t in traces)
            ins = sum(t["counts"][v]["insufficient_evidence"] for t in traces)
            tot = sum(sum(t["counts"][v].values()) for t in traces)
            files = sum(1 for t in traces if t["counts"][v]["abnormal"])
            cells.append(f"{ab} abnormal ({files} files), {ins} insufficient, of {tot} units in {len(traces)} files")
        md.append(f"| real traces, truffld (peer) | {cells[0]} | {cells[1]} |")
    shapes = [s for s in (healthy or {}).get("shapes", []) if "peer" in s]
    if shapes:
        worst = []
        for v in VIEWS:
            s = max(shapes, key=lambda s: s["peer"][v]["fa"] or 0)
            worst.append(f"{pct(s['peer'][v]['fa'], 2)} ({s['name']}); {len(shapes)} shapes")
        md.append(f"| healthy false alarms, truffld (peer), worst shape | {worst[0]} | {worst[1]} |")
    tables = (res or {}).get("suites", {}).get("default", {}).get("tables", {})
    for m in (PEER, POOLED, "flag every step", "RandomForest", "SVM"):
        cells = []
        for v in VIEWS:
            r = _row(tables.get(v, []), m)
            cells.append("–" if r is None else f"F1 {r['f1']:.3f} / Macro+ F1 {r['mp_f1']:.3f} / op prec {f3(r['op_prec'])}")
        md.append(f"| {m} | {cells[0]} | {cells[1]} |")
    return md + [""]


def suite_intro(suite, s, quick):
    ls = s.get("label_stats", {})
    n = len(s.get("scenarios", {}))
    failed = [k for k, i in s["scenarios"].items() if "failed" in i]
    lines = [f"{n} scenarios ({'quick run, ' if quick else ''}one `truffld-synth` run each, flags in the per-scenario "
             "table); ground truth from labels.jsonl. Labelled abnormal: " + ", ".join(
                 f"{v} {x['abnormal']} of {x['units']} units ({pct(x['share'])}; test split {x['test_units']} units)"
                 for v, x in ls.items()) + "."]
    if failed:
        lines.append(f"**Failed scenarios (left out): {', '.join(failed)}** (see evaluate.log).")
    cov = s.get("label_coverage", {})
    if cov:
        lines.append("Label coverage (labelled (unit, family) pairs whose family has an instance in the unit's trees): "
                     + ", ".join(f"{v} {c['visible']} of {c['true_pairs']} ({pct(c['share'])})" for v, c in cov.items())
                     + ".")
    return lines + [""]


def methods(s):
    md = []
    if s.get("baselines_error"):
        md += [f"**The baselines failed in this run ({cell(s['baselines_error'], 200)}); see evaluate.log.**", ""]
    for v in VIEWS:
        rows = s.get("tables", {}).get(v)
        if rows:
            md += [f"#### {v} view", "", metrics.format_table("Method", rows).rstrip("\n"), ""]
    cfg = s.get("baseline_configs", {})
    if cfg:
        md.append("Baseline configurations chosen on the validation split: " + "; ".join(
            f"{m} " + ", ".join(f"{v} `{c}`" for v, c in pv.items()) for m, pv in cfg.items()) + ".")
        md.append("")
    return md


def per_family(s, method=PEER):
    """Per-family counts of one method on the test split, in a collapsed block per view."""
    md = []
    for v in VIEWS:
        r = _row(s.get("tables", {}).get(v, []), method)
        if not r or not r.get("per_family"):
            continue
        md += [f"<details><summary>{method}, {v} view: per family on the test split (faulty or blamed "
               "families; Macro+ averages F1 over those with TP + FN > 0)</summary>", "",
               "| family | TP | FP | FN | F1 |", "|---|---|---|---|---|"]
        for f, x in sorted(r["per_family"].items(), key=lambda t: (-(t[1]["tp"] + t[1]["fn"]), t[0])):
            md.append(f"| `{cell(f, 80)}` | {x['tp']} | {x['fp']} | {x['fn']} | {x['f1']:.3f} |")
        md += ["", "</details>", ""]
    return md


def _seed_range(x):
    return "" if len(x.get("seed_f1", [])) < 2 else f" ({min(x['seed_f1']):.2f}–{max(x['seed_f1']):.2f})"


def _pct(x):
    return f"{100 * x:.1f}%" if x < 0.1 else f"{100 * x:.0f}%"


def _share_cell(x):
    cs = x.get("cost_share")
    return "–" if not cs else f"{_pct(cs['median'])} ({_pct(cs['min'])}–{_pct(cs['max'])})"


def per_class(s, method=PEER):
    rows = s.get("per_class", {}).get(method, [])
    if not rows:
        return []
    md = ["| class | intensity | seeds | labelled abnormal V / H of units | what the labelled faults cost their step, "
          "V / H: median (min–max) | V step F1 (seed range) | H step F1 (seed range) "
          "| false alarms V / H | insufficient V / H | op precision V / H (blames) | mean excess of correct blames "
          "V / H | steps slower-regime findings named (labelled faulty) |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for cls, level, views in rows:
        vv, hh = views["vertical"], views["horizontal"]
        ex = " / ".join("–" if x["excess_us"] is None else f"{x['excess_us']:.1f} µs" for x in (vv, hh))
        md.append(f"| {cls} | {level} | {vv['seeds']} | {vv['positives']} / {hh['positives']} of {vv['units']} | "
                  f"{_share_cell(vv)} / {_share_cell(hh)} | {f3(vv['f1'])}{_seed_range(vv)} | {f3(hh['f1'])}{_seed_range(hh)} | {vv['fp']} / {hh['fp']} | "
                  f"{vv['insufficient']} / {hh['insufficient']} | {f3(vv['op_prec'])} ({vv['blames']}) / "
                  f"{f3(hh['op_prec'])} ({hh['blames']}) | {ex} | {vv.get('regime_steps', 0)} ({vv.get('regime_faulty', 0)}) |")
    return md + [""]


def per_scenario(s):
    md = ["| scenario | synth flags | records | labelled abnormal V / H | peer V F1 | peer H F1 | peer FP V / H | "
          "peer op prec V / H | pooled V F1 | pooled H F1 | peer s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, info in s.get("scenarios", {}).items():
        if "failed" in info:
            md.append(f"| {name} | `{info['args']}` | failed: {info['failed']} | | | | | | | | |")
            continue
        sc = s.get("per_scenario", {}).get(name, {})
        p, q = sc.get(PEER, {}), sc.get(POOLED, {})
        pv, ph = p.get("vertical", {}), p.get("horizontal", {})
        ab = info.get("abnormal", {})
        if info.get("failed_modes"):
            name = f"{name} (diagnose failed: {', '.join(info['failed_modes'])})"
        md.append(f"| {name} | `{info['args']}` | {info.get('records')} | {ab.get('vertical')} / {ab.get('horizontal')} "
                  f"of {info.get('rank_steps')} | {f3(pv.get('f1'))} | {f3(ph.get('f1'))} | {pv.get('fp', '–')} / "
                  f"{ph.get('fp', '–')} | {f3(pv.get('op_prec'))} / {f3(ph.get('op_prec'))} | "
                  f"{f3(q.get('vertical', {}).get('f1'))} | {f3(q.get('horizontal', {}).get('f1'))} | "
                  f"{info.get('diagnose_peer_seconds', 0):.1f} |")
    return md + [""]


def _wl(w):
    if not w:
        return "–"
    ph = ", ".join(f"{k} {n}" for k, n in sorted(w["phases"].items()))
    req = "–" if not w["requests"] else f"{w['requests'][0]}–{w['requests'][1]}"
    tok = "untagged" if not w["tokens"] else f"{w['tokens'][0]:,}–{w['tokens'][1]:,}"
    return f"{ph}; requests/step {req}; tokens/non-decode step {tok}"


def healthy_table(h):
    if not h or not h.get("shapes"):
        return ["Not run." if not h else f"Not run: {h.get('missing_tools', '')}", ""]
    md = ["| shape | synth flags | seeds | units V / H | peer abnormal V / H | peer insufficient V / H | peer FA V | "
          "peer FA H | worst seed FA V / H | pooled (legacy) FA V / H | flag every step FA | peer slower-regime findings |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in h["shapes"]:
        if "peer" not in s:
            md.append(f"| {s['name']} | `{s['flags']}` | {s['seeds']} | failed | | | | | | | | |")
            continue
        p, q = s["peer"], s.get("pooled")
        units = " / ".join(str(sum(p[v][lab] for lab in ("normal", "abnormal", "insufficient_evidence"))) for v in VIEWS)
        md.append(
            f"| {s['name']} | `{s['flags']}` | {s['seeds']} | {units} | "
            f"{p['vertical']['abnormal']} / {p['horizontal']['abnormal']} | "
            f"{p['vertical']['insufficient_evidence']} / {p['horizontal']['insufficient_evidence']} | "
            f"{pct(p['vertical']['fa'], 2)} | {pct(p['horizontal']['fa'], 2)} | "
            f"{pct(p['vertical']['worst_seed_fa'], 2)} / {pct(p['horizontal']['worst_seed_fa'], 2)} | "
            + (f"{pct(q['vertical']['fa'])} / {pct(q['horizontal']['fa'])}" if q else "–") + " | 100% | "
            + str(s.get("slower_regimes", "–")) + " |")
    md += ["", "Workload each shape produced (first seed, vertical units, from the diagnosed step names) and topology:", "",
           "| shape | covers | ranks (TP x hosts, PP) | phases; requests per step; tokens per non-decode step |",
           "|---|---|---|---|"]
    for s in h["shapes"]:
        if "peer" in s:
            md.append(f"| {s['name']} | {s['description']} | {s['ranks']} ({s['tp']} x {s['hosts']}, PP {s['pp']}) | "
                      f"{_wl(s.get('workload'))} |")
    ex = [(s["name"], e) for s in h["shapes"] for e in s.get("examples", [])]
    if ex:
        md += ["", "False alarms on healthy runs, first evidence sentences (up to 3 per shape):", ""]
        md += [f"- {n}: {cell(e, 300)}" for n, e in ex[:12]]
    return md + [""]


def not_run(part):
    """The lines saying a part did not run or was skipped, else None."""
    if not part:
        return ["Not run.", ""]
    if part.get("skipped"):
        return [f"**Skipped:** {part['skipped']}.", ""]
    return None


def real_table(r):
    skipped = not_run(r)
    if skipped:
        return skipped
    md = ["| trace | ranks | steps per rank (max) | instances | vertical normal / abnormal / insufficient | horizontal normal / "
          "abnormal / insufficient | abnormal units: what each cost its step | run findings | "
          "justification (first abnormal unit, else first insufficient one) |",
          "|---|---|---|---|---|---|---|---|---|"]
    for t in r["traces"]:
        if "counts" not in t:
            md.append(f"| {t['name']} | | | | failed: {t.get('failed')} | | | | |")
            continue
        c = t["counts"]
        lab = " / ".join
        ex = t.get("abnormal_example") or t.get("insufficient_example")
        why = "–"
        if ex:
            why = f"{ex['view']}: {cell(ex['evidence'], 260)}"
            if ex.get("operator_evidence"):
                why += f" — {cell(ex['operator_evidence'], 200)}"
        ins = "–" if t.get("instances") is None else f"{t['instances']:,}"
        costs = "; ".join(
            f"{a['view'][0].upper()} rank {a['rank'] if a['rank'] is not None else '-'} step {a['step']}: "
            + (f"{a['impact_ns'] / 1e6:.2f} ms" if a.get("impact_ns") is not None else "not replayed")
            + (f" ({100 * a['share']:.1f}%)" if a.get("share") is not None else "")
            for a in t.get("abnormal") or []) or "–"
        findings = t.get("run_findings")
        found = "–" if findings is None else (str(len(findings)) + (": " + cell(findings[0], 160) if findings else ""))
        md.append(f"| {t['name']} | {t.get('ranks', '–')} | {t.get('max_steps_per_rank', '–')} | {ins} | "
                  f"{lab(str(c['vertical'][k]) for k in ('normal', 'abnormal', 'insufficient_evidence'))} | "
                  f"{lab(str(c['horizontal'][k]) for k in ('normal', 'abnormal', 'insufficient_evidence'))} | "
                  f"{costs} | {found} | {why} |")
    return md + [""]


def cost_table(c):
    if not c or c.get("skipped"):
        return [f"Not run{': ' + c['skipped'] if c and c.get('skipped') else ''}.", ""]
    md = ["| input | synth flags | mode | instances | diagnose wall s | instances/s | peak RSS MiB |",
          "|---|---|---|---|---|---|---|"]
    for r in c["runs"]:
        n = r.get("instances") or 0
        rate = f"{n / r['seconds']:,.0f}" if r.get("seconds") else "–"
        md.append(f"| {r['what']} | `{r['flags']}` | {r['mode']} | {n:,} | {r['seconds']:.1f} | {rate} | "
                  f"{r.get('rss_mib') or 0:.0f} |")
    return md + [""]


def _met(ok):
    return "–" if ok is None else ("yes" if ok else "no")


def targets(res, healthy, real, cost):
    """The measurable acceptance targets of the peer-relative diagnosis, each with the figure
    measured in this run. Rows whose data were not produced show "–"."""
    d = (res or {}).get("suites", {}).get("default", {})
    tab = d.get("tables", {})
    rows = []

    def r(view, method=PEER):
        return _row(tab.get(view, []), method)
    shapes = [s for s in (healthy or {}).get("shapes", []) if "peer" in s]
    if shapes:
        w = {v: max(shapes, key=lambda s: s["peer"][v]["worst_seed_fa"] or 0) for v in VIEWS}
        fa = {v: w[v]["peer"][v]["worst_seed_fa"] or 0 for v in VIEWS}
        rows.append(("healthy false alarms <= 1% of units on every shape, both views (worst seed)",
                     f"V {pct(fa['vertical'], 2)} ({w['vertical']['name']}), H {pct(fa['horizontal'], 2)} "
                     f"({w['horizontal']['name']})", _met(max(fa.values()) <= 0.01)))
    v, h = r("vertical"), r("horizontal")
    if v and h:
        rows.append(("step F1 >= 0.90 vertical, >= 0.85 horizontal", f"V {v['f1']:.3f}, H {h['f1']:.3f}",
                     _met(v["f1"] >= 0.90 and h["f1"] >= 0.85)))
        rows.append(("operator Macro+ F1 >= 0.80, both views", f"V {v['mp_f1']:.3f}, H {h['mp_f1']:.3f}",
                     _met(min(v["mp_f1"], h["mp_f1"]) >= 0.80)))
        rows.append(("operator precision >= 0.80, both views", f"V {f3(v['op_prec'])}, H {f3(h['op_prec'])}",
                     _met(None if v["op_prec"] is None or h["op_prec"] is None else
                          min(v["op_prec"], h["op_prec"]) >= 0.80)))
        ahead = []
        for view, mine in (("vertical", v), ("horizontal", h)):
            others = [x for x in (r(view, "RandomForest"), r(view, "SVM")) if x]
            ahead.append((view, mine["f1"], max((x["f1"] for x in others), default=None)))
        rows.append(("step F1 ahead of RandomForest and SVM, both views",
                     ", ".join(f"{vw[0].upper()} {a:.3f} vs best {f3(b)}" for vw, a, b in ahead),
                     _met(None if any(b is None for _, _, b in ahead) else all(a > b for _, a, b in ahead))))
    strong = [(cls, view, x) for cls, lvl, views in d.get("per_class", {}).get(PEER, []) if lvl == "strong"
              for view, x in views.items() if x["f1"] is not None]
    if strong:
        worst = min(strong, key=lambda t: t[2]["f1"])
        paid = "" if not worst[2].get("cost_share") else (
            f"; its labelled faults cost their steps {_share_cell(worst[2])}, the 1% impact floor is "
            "`--min-impact-share`")
        rows.append(("every fault class at strong intensity: step F1 >= 0.80 (per view with labelled units)",
                     f"lowest {worst[2]['f1']:.3f} ({worst[0]}, {worst[1]}{paid})", _met(worst[2]["f1"] >= 0.80)))
        blames = sum(x["blames"] for _, _, views in d["per_class"][PEER] for x in views.values())
        missing = sum(x.get("no_excess", 0) for _, _, views in d["per_class"][PEER] for x in views.values())
        rows.append(("every faulty operator carries its excess time", f"{missing} of {blames} blames without excess_ns",
                     _met(missing == 0)))
    traces = [t for t in (real or {}).get("traces", []) if "counts" in t]
    if traces:
        single = [t for t in traces if t.get("max_steps_per_rank", 0) <= 1]
        bad = sum(t["counts"][vw]["abnormal"] for t in single for vw in VIEWS)
        rows.append(("real traces with one step per rank: no abnormal verdict",
                     f"{bad} abnormal units in {len(single)} single-step traces", _met(bad == 0)))
    big = max(((c.get("instances") or 0, c) for c in (cost or {}).get("runs", []) if c.get("mode") == "peer"),
              default=(0, None), key=lambda t: t[0])[1]
    if big:
        n = big["instances"] or 0
        rows.append(("Stage I over 5 M instances within 60 s on 2 cores", f"{n:,} instances in {big['seconds']:.1f} s",
                     _met(n >= 5_000_000 and big["seconds"] <= 60) if n >= 5_000_000 else "– (smaller input)"))
    if not rows:
        return []
    md = ["## Targets", "", "The acceptance targets of the peer-relative diagnosis against this run "
          "(default suite, held-out test split, truffld peer, `--llm off`).", "",
          "| target | measured | met |", "|---|---|---|"]
    md += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return md + [""]


def _engine_cells(s):
    fa = "–" if s["false_alarm_rate"] is None else f"{s['false_alarms']} of {s['clean_steps']} ({100 * s['false_alarm_rate']:.1f}%)"
    classes = "; ".join(f"{k} {c['flagged']}/{c['steps']} (right operator {c['blamed']})"
                        for k, c in sorted(s["classes"].items())) or "–"
    return fa, classes


def engine_table(e):
    """Real serving-engine runs (engine_runs.py): one row per run and method."""
    skipped = not_run(e)
    if skipped:
        return skipped
    md = ["| run | engine | steps (judged / insufficient) | null (centre, spread; a lone faulty step flaggable?) | "
          "warm-up: steps above the impact floor, time (not judged) | method | "
          "flagged | false alarms | fault steps flagged, per class |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in e["runs"]:
        if r.get("failed"):
            md.append(f"| {r['name']} | | | | | failed: {r['failed']} | | | |")
            continue
        eng = r.get("engine") or {}
        what = (f"{r.get('requests')} requests, {'CUDA graphs' if eng.get('use_cuda_graph') else 'eager'}, "
                f"{eng.get('max_batch_tokens')} batch tokens, {r.get('tokens_per_s')} tok/s traced")
        t = r["truffld"]
        steps = f"{r['steps']} ({t['judged']} / {t['insufficient']})"
        null = r.get("null") or {}
        flaggable = "yes" if null.get("lone_step_detectable", True) else "**no**: a clean result proves little"
        nullcell = f"{null.get('centre', 0):.1f}, {null.get('scale', 1):.1f}; {flaggable}"
        w = r.get("warmup") or {}
        warmcell = f"{w.get('above_impact_floor', 0)}, {w.get('excess_ns', 0) / 1e6:.1f} ms" if w else "–"
        for method, label in (("truffld", "truffld"), ("flag_every_step", "flag every step"),
                              ("flag_no_step", "flag no step")):
            s = r[method]
            fa, classes = _engine_cells(s)
            first = method == "truffld"
            md.append(f"| {r['name'] if first else ''} | {what if first else ''} | {steps if first else ''} | "
                      f"{nullcell if first else ''} | {warmcell if first else ''} | {label} | {s['flagged']} | {fa} | {classes} |")
    md.append("")
    for r in e["runs"]:
        null = r.get("null") or {}
        if r.get("examples"):
            md.append(f"- {r['name']} (empirical null: centre {null.get('centre', 0):.1f}, spread {null.get('scale', 1):.1f}): "
                      + " / ".join(cell(x, 240) for x in r["examples"]))
    return md + [""]


def overhead_table(e):
    """Capture overhead measured with the runs (tests/gpu/engine_overhead.py output: the current
    format, workloads with paired ratios and intervals, or the older one, engine/loop medians)."""
    rows = []
    for device, o in sorted((e or {}).get("overhead", {}).items()):
        parts = [(label, d.get("unit", "?"), d) for label, d in (o.get("workloads") or {}).items()]
        parts += [(label, unit, o.get(kind) or {}) for kind, label, unit in
                  (("engine", "serving engine", "tokens/s"), ("loop", "eager PyTorch loop", "s")) if kind in o]
        for label, unit, part in parts:
            for r in part.get("rows", []):
                median = r.get("median", statistics.median(r["values"]) if r.get("values") else float("nan"))
                ratio = f"{r['ratio']:.2f}x" + (f" [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]" if r.get("ci95") else "")
                rows.append(f"| {device} | {label} | {r.get('rounds', o.get('rounds', '?'))} | {r['setting']} | "
                            f"{median:.3g} {unit} | {ratio} | {', '.join(f'{v:.3g}' for v in r['values'])} |")
    if not rows:
        return []
    return (["Capture overhead measured with these runs (`tests/gpu/engine_overhead.py`, settings interleaved round by "
             "round; ratio = cost against `off`: tokens/s of off over the setting's, or the loop's time over off's; where an "
             "interval is given, the ratio is the median of per-round paired ratios and the interval its bootstrap 95 %):", "",
             "| file | workload | rounds | setting | median | ratio | values |", "|---|---|---|---|---|---|---|"] + rows + [""])
