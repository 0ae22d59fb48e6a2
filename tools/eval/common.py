"""Shared plumbing of the evaluation scripts: running the truffld tools with a log and a time limit,
and reading what they write (labels.jsonl, diagnosis.jsonl, stats.json) into plain dicts.

A unit is one (rank, step, view) line; its key is (scenario, rank as text, step_index), the same
key in labels, diagnosis and the baselines' feature export. Every failure is logged and returned
as a value, never raised: one broken scenario must not stop a benchmark run.
Single-threaded; no state besides the log file handle.
"""
import csv
import json
import os
import re
import subprocess
import time

VIEWS = ("vertical", "horizontal")
LABELS = ("normal", "abnormal", "insufficient_evidence")
TIMEOUT_S = 1800


class Log:
    """Prints and appends to WORK/<name>.log."""

    def __init__(self, work, name):
        os.makedirs(work, exist_ok=True)
        self.f = open(os.path.join(work, f"{name}.log"), "w", encoding="utf-8")

    def __call__(self, msg):
        print(msg, flush=True)
        self.f.write(msg + "\n")
        self.f.flush()


class Tools:
    """Paths of the three binaries under a build (or snapshot) directory."""

    def __init__(self, bin_dir):
        self.synth = os.path.join(bin_dir, "tools/synth/truffld-synth")
        self.merge = os.path.join(bin_dir, "merge/truffld-merge")
        self.diagnose = os.path.join(bin_dir, "diagnose/truffld-diagnose")

    def have(self, *names):
        return all(os.path.exists(getattr(self, n)) for n in names)


def run(cmd, log, timeout=TIMEOUT_S):
    """Runs cmd; returns (ok, wall seconds). Failures and timeouts are logged with their output tail."""
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        log(f"TIMEOUT after {timeout} s: {' '.join(cmd)}")
        return False, time.time() - t0
    except OSError as e:
        log(f"FAILED to start: {' '.join(cmd)}: {e}")
        return False, time.time() - t0
    if r.returncode != 0:
        log(f"FAILED ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}")
    return r.returncode == 0, time.time() - t0


def timed(cmd, log, timeout=TIMEOUT_S):
    """Runs cmd under /usr/bin/time -v: (ok, wall seconds, peak RSS MiB)."""
    t0 = time.time()
    try:
        r = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        log(f"TIMEOUT after {timeout} s: {' '.join(cmd)}")
        return False, time.time() - t0, None
    wall, rss = time.time() - t0, None
    for line in r.stderr.splitlines():
        line = line.strip()
        if line.startswith("Elapsed (wall clock) time"):
            parts = line.rsplit(" ", 1)[1].split(":")
            wall = sum(float(p) * 60 ** i for i, p in enumerate(reversed(parts)))
        elif line.startswith("Maximum resident set size"):
            rss = int(line.rsplit(" ", 1)[1]) / 1024.0
    if r.returncode != 0:
        log(f"FAILED ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}")
    return r.returncode == 0, wall, rss


def synth_and_merge(tools, sdir, sargs, log, keep_dumps=False):
    """truffld-synth SARGS into SDIR/dump, truffld-merge into SDIR/merged (no trace.json).
    Returns the synth summary dict (with synth/merge seconds) or None when either step failed.
    The raw dumps are deleted after a merge unless keep_dumps (labels and ledger stay)."""
    dump, merged = os.path.join(sdir, "dump"), os.path.join(sdir, "merged")
    subprocess.run(["rm", "-rf", sdir])
    ok, ts = run([tools.synth, *sargs, "-q", "--out", dump], log)
    if not ok:
        return None
    summ = json.load(open(os.path.join(dump, "synth_summary.json")))
    summ["synth_seconds"] = ts
    files = sorted(os.path.join(dump, f) for f in os.listdir(dump) if f.startswith("truffld-"))
    ok, tm = run([tools.merge, *files, "-o", merged, "--no-trace-json", "-q"], log)
    if not keep_dumps:
        for f in files:
            os.remove(f)
    if not ok:
        return None
    summ["merge_seconds"] = tm
    return summ


def diagnose(tools, merged, ddir, log, mode="peer", labels=None, extra=()):
    """truffld-diagnose --llm off; returns (ok, seconds)."""
    cmd = [tools.diagnose, merged, "-o", ddir, "--mode", mode, "--llm", "off", "--no-html", "-q", *extra]
    if labels:
        cmd += ["--labels", labels]
    return run(cmd, log)


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(x) for x in f if x.strip()]


def unit_key(scen, rank, step_index):
    return (scen, "" if rank is None else str(rank), step_index)


def label_truth(path, scen):
    """labels.jsonl -> {view: {key: set(faulty families)}}."""
    truth = {v: {} for v in VIEWS}
    for lab in read_jsonl(path):
        truth.setdefault(lab["view"], {})[unit_key(scen, lab["rank"], lab["step_index"])] = set(lab["faulty"])
    return truth


def label_cost_shares(path):
    """labels.jsonl -> {view: [share]}: what each unit labelled abnormal cost its step, as a share of
    the step without the fault (cost_ns / counterfactual_ns; units without them are left out)."""
    out = {v: [] for v in VIEWS}
    for lab in read_jsonl(path):
        cf = lab.get("counterfactual_ns")
        if lab.get("abnormal") and lab.get("cost_ns") is not None and cf:
            out.setdefault(lab["view"], []).append(lab["cost_ns"] / cf)
    return out


def read_diagnosis(path, scen):
    """diagnosis.jsonl -> {view: {key: unit}}; unit = {label, fams (set), blames [(family, excess_ns)],
    evidence, top_blame_evidence (of the faulty operator with the largest excess), phase, requests,
    tokens, impact_ns and duration_ns (None when absent)}. An abnormal unit without faulty operators carries the
    family '__abnormal__' so step metrics still see it. A faulty entry with effect_of (device idle
    that a host family's late launches caused) names its cause's time, not a blame: left out."""
    out = {v: {} for v in VIEWS}
    for d in read_jsonl(path):
        faulty = [f for f in d.get("faulty", []) if not f.get("effect_of")]
        fams = {f["family"] for f in faulty}
        label = d.get("label", "abnormal" if fams else "normal")
        if label == "abnormal" and not fams:
            fams = {"__abnormal__"}
        m = re.search(r"\[tokens:(\d+)\]", d.get("step", ""))
        top = max(faulty, key=lambda f: f.get("excess_ns") or 0) if faulty else {}
        out.setdefault(d["view"], {})[unit_key(scen, d.get("rank"), d["step_index"])] = {
            "label": label, "fams": fams if label == "abnormal" else set(),
            "blames": [(f["family"], f.get("excess_ns")) for f in faulty] if label == "abnormal" else [],
            "evidence": d.get("evidence", ""), "top_blame_evidence": top.get("evidence", ""), "phase": d.get("phase", ""),
            "requests": len(d.get("requests", []) or []), "tokens": int(m.group(1)) if m else None,
            "impact_ns": d.get("impact_ns"), "duration_ns": d.get("duration_ns")}
    return out


def label_counts(units):
    """{key: unit} -> {label: count} over LABELS."""
    c = {lab: 0 for lab in LABELS}
    for u in units.values():
        c[u["label"]] = c.get(u["label"], 0) + 1
    return c


def instances(stats_path):
    """stats.json input.instances, or None."""
    try:
        return json.load(open(stats_path))["input"]["instances"]
    except (OSError, ValueError, KeyError):
        return None


def slower_regime_steps(stats_path):
    """stats.json peer.slower_regimes -> [(rank as unit_key writes it, step_index)] of every step a
    slower-regime finding names (empty when there is none or no stats)."""
    try:
        regimes = json.load(open(stats_path))["peer"].get("slower_regimes", [])
    except (OSError, ValueError, KeyError):
        return []
    return [("" if g["rank"] is None else str(g["rank"]), st) for g in regimes for st in g.get("steps", [])]


def merge_nested(dst, src):
    """dst[view].update(src[view]) for {view: {key: value}} dicts."""
    for v, d in src.items():
        dst.setdefault(v, {}).update(d)
    return dst



# Columns of truffld-diagnose --export-features that identify or label an instance; every other
# numeric column is a feature.
FEATURE_KEYS = ("rank", "step_index", "view", "family", "layer", "parent", "start_ns", "end_ns", "rho",
                "step_abnormal", "family_faulty")


def _flag(x):
    return 1 if x in (True, 1, "1", "true", "True") else 0


def read_features(path):
    """An --export-features file, CSV or JSONL (told apart by its first byte) -> (feature names,
    sorted; list of (rank text, step_index, view, family, step_abnormal, family_faulty, [values]))."""
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        first = f.read(1)
        f.seek(0)
        if first == "{":
            names = None
            for line in f:
                if not line.strip():
                    continue
                d = json.loads(line)
                if names is None:
                    names = sorted(k for k, v in d.items() if k not in FEATURE_KEYS and isinstance(v, (int, float)))
                rows.append((str(d["rank"]), int(d["step_index"]), d["view"], d["family"], _flag(d["step_abnormal"]),
                             _flag(d["family_faulty"]), [d.get(n, 0.0) for n in names]))
            return names or [], rows
        rd = csv.reader(f)
        header = next(rd, [])
        if "end_ns" not in header or "rho" not in header:
            raise ValueError(f"{path}: not a truffld-diagnose feature export (no end_ns/rho columns)")
        # CSV: the features are the columns between end_ns and rho.
        names = sorted(header[header.index("end_ns") + 1: header.index("rho")])
        col = {h: i for i, h in enumerate(header)}
        idx = [col[n] for n in names]
        ir, isx, iv, ifam = col["rank"], col["step_index"], col["view"], col["family"]
        iab, iff = col["step_abnormal"], col["family_faulty"]
        for r in rd:
            rows.append((r[ir], int(r[isx]), r[iv], r[ifam], _flag(r[iab]), _flag(r[iff]), [r[i] for i in idx]))
    return names, rows
