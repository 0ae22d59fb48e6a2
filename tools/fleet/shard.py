"""One shard's work for truffld-fleet: truffld-merge then truffld-diagnose on one replica's dumps
(all its steps, or one window of them: shard "window" [K, N] runs truffld-merge --step-window K:N,
steps K*N..K*N+N-1 plus the step before, and writes under replica-<id>/window-<K>/).

Runs where the shard's dumps are (a Dask worker, or in-process) and writes OUT/replica-<id>/:
merged/ (truffld-merge's outputs), the diagnose outputs (diagnosis.jsonl, report.html,
step_features.jsonl, stats.json, ...) and .fleet-shard.json, written last, naming the input
checksum (sha256 over the dumps' names and bytes, the two tools' binaries by path, size and
modification time, and the diagnose flags). A rerun whose checksum matches skips the tools.
Returns a small dict: the status, the reason when it failed, and step_features.jsonl's text
(what travels to the reduce) and steps_in_dumps (the most steps of a rank in the dumps, from
truffld-merge's summary.json: how many windows the replica has). A tool that fails makes the shard "failed" with the tool's last
stderr lines; nothing is raised, so the other shards complete. The tools die with the process
that started them (PR_SET_PDEATHSIG), so a killed worker leaves no writer behind. Thread-safety: reentrant (one shard per call).
"""
import ctypes
import hashlib
import json
import os
import signal
import subprocess
import time

from safe_write import write_text

MARKER = ".fleet-shard.json"
FEATURES = "step_features.jsonl"


def shard_dir(out_root, replica, window=None):
    d = os.path.join(out_root, "replica-%s" % replica)
    return os.path.join(d, "window-%d" % window[0]) if window else d


def _hash_file(h, path):
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)


def input_checksum(files, tools, diagnose_args):
    """sha256 over the dumps (name and bytes), the tool binaries (path, size, modification time)
    and the diagnose flags."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(os.path.basename(path).encode() + b"\0")
        _hash_file(h, path)
    for tool in tools:  # a rebuilt tool changes its size or time; hashing 100 MB binaries per shard would not pay
        st = os.stat(tool)
        h.update(("%s\0%d\0%d\0" % (os.path.realpath(tool), st.st_size, st.st_mtime_ns)).encode())
    h.update(json.dumps(list(diagnose_args)).encode())
    return h.hexdigest()


def _die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_die_with_parent,
                          check=False)
    if proc.returncode == 0:
        return None
    tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
    return "%s exited %d: %s" % (os.path.basename(cmd[0]), proc.returncode, " | ".join(tail) or "(no message)")


def _read_marker(d):
    try:
        with open(os.path.join(d, MARKER), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def diagnose_command(diagnose, merged, outdir, replica, extra):
    return [diagnose, merged, "-o", outdir, "--step-features", "--replica", str(replica), "--llm", "off",
            "-q", "--wait-lock"] + list(extra)


def merge_command(merge, files, merged, window=None):
    return [merge] + sorted(files) + ["-o", merged, "-q"] + (["--step-window", "%d:%d" % tuple(window)] if window else [])


def _steps_in_dumps(merged):
    """The most steps of one rank in the dumps (summary.json), 0 when unreadable."""
    try:
        with open(os.path.join(merged, "summary.json"), encoding="utf-8") as f:
            ranks = json.load(f).get("ranks", [])
        return max([int(r.get("steps_in_dumps", r.get("steps", 0))) for r in ranks] or [0])
    except (OSError, ValueError, TypeError, AttributeError):
        return 0


def run_shard(shard, out_root, merge, diagnose, diagnose_args=()):
    """Merges and diagnoses one shard (see the module doc); returns its result dict."""
    t0 = time.monotonic()
    rep, window = shard["replica"], shard.get("window")
    d = shard_dir(out_root, rep, window)
    res = {"replica": rep, "hosts": shard["hosts"], "ranks": shard["ranks"], "pool": shard.get("pool", ""),
           "window": window, "steps_in_dumps": 0, "status": "failed",
           "reason": "", "features": "", "seconds": 0.0, "dir": d}
    try:
        key = input_checksum(shard["files"], [merge, diagnose],
                             list(diagnose_args) + (["--step-window=%d:%d" % tuple(window)] if window else []))
    except OSError as e:
        res["reason"] = "cannot read an input: %s" % e
        return res
    marker = _read_marker(d)
    feats = os.path.join(d, FEATURES)
    if marker and marker.get("key") == key and os.path.isfile(feats):
        res["status"] = "skipped"
    else:
        os.makedirs(d, exist_ok=True)
        if os.path.exists(os.path.join(d, MARKER)):
            os.remove(os.path.join(d, MARKER))
        merged = os.path.join(d, "merged")
        err = _run(merge_command(merge, shard["files"], merged, window)) or \
            _run(diagnose_command(diagnose, merged, d, rep, diagnose_args))
        if err:
            res["reason"] = err
            res["seconds"] = time.monotonic() - t0
            return res
        write_text(os.path.join(d, MARKER), json.dumps(
            {"schema": "truffld.fleet_shard/1", "replica": rep, "key": key, "hosts": shard["hosts"],
             "ranks": shard["ranks"], "files": [os.path.basename(p) for p in sorted(shard["files"])]}) + "\n")
        res["status"] = "done"
    res["steps_in_dumps"] = _steps_in_dumps(os.path.join(d, "merged"))
    try:
        with open(feats, encoding="utf-8") as f:
            res["features"] = f.read()
    except OSError as e:
        res["status"] = "failed"
        res["reason"] = "%s: %s" % (feats, e)
    res["seconds"] = time.monotonic() - t0
    return res
