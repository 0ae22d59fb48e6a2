"""Helpers shared by the truffld-diagnose CLI tests: the loopback policy stub as a context
manager (ephemeral port, statistics read back on exit), running the CLI (run_diag: never by a
signal), a work folder with synthetic trees, schema validation of
diagnosis.jsonl, and a byte search of whole output trees. Standard library + python3-jsonschema."""
import json
import os
import subprocess
import sys


def fail(msg):
    sys.exit("FAIL: " + msg)


class Stub:
    """tests/diagnose/llm_policy_stub.py on 127.0.0.1, a free port; .stats after the with-block."""

    def __init__(self, script, stats_path, *extra):
        self.cmd = [sys.executable, script, "--port", "0", "--stats", stats_path, *extra]
        self.stats_path = stats_path
        self.stats = None

    def __enter__(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if "http://127.0.0.1:" not in line:
            self.proc.kill()
            fail("stub did not start: %r %s" % (line, self.proc.stderr.read()))
        self.url = line[line.index("http://"):]
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if os.path.exists(self.stats_path):
            with open(self.stats_path) as f:
                self.stats = json.load(f)
        return False


def run(cmd, env=None, expect_rc=0):
    """Runs cmd; returns (stdout bytes, stderr bytes); fails on an unexpected exit status."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=600)
    if p.returncode != expect_rc:
        fail("exit %d (wanted %d): %s\n%s\n%s" % (p.returncode, expect_rc, " ".join(map(str, cmd)),
                                                 p.stdout.decode("utf-8", "replace")[-3000:],
                                                 p.stderr.decode("utf-8", "replace")[-3000:]))
    return p.stdout, p.stderr


def run_diag(cmd, timeout=300, cwd=None):
    """Runs truffld-diagnose (cmd[0]); returns the CompletedProcess (text). Exits when the tool
    ended by a signal or with a status outside its own 0-3 (abort() gives 134)."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    if p.returncode < 0 or p.returncode > 3:
        sys.exit(f"truffld-diagnose crashed (exit {p.returncode}) on {cmd[1:]}:\n{p.stderr[-2000:]}")
    return p


def synth_workdir(synth, work):
    """A fresh `work` holding diagnose_synth_trees' output in work/data: returns the trees.jsonl
    path and its first tree as JSON (a template for hand-made lines)."""
    import shutil
    shutil.rmtree(work, ignore_errors=True)
    data = os.path.join(work, "data")
    os.makedirs(data)
    subprocess.run([synth, data], check=True, capture_output=True)
    trees = os.path.join(data, "trees.jsonl")
    with open(trees) as f:
        return trees, json.loads(f.readline())


def read_diagnoses(path, schema_path):
    """Every line: strict UTF-8, one JSON object, valid against the diagnosis schema."""
    import jsonschema
    with open(schema_path) as f:
        validator = jsonschema.Draft202012Validator(json.load(f))
    out = []
    with open(path, "rb") as f:
        for i, raw in enumerate(f, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                fail("%s:%d: not UTF-8: %s" % (path, i, e))
            if not text.endswith("\n") or "\n" in text[:-1]:
                fail("%s:%d: not exactly one line" % (path, i))
            d = json.loads(text)
            errors = sorted(validator.iter_errors(d), key=lambda e: list(e.path))
            if errors:
                fail("%s:%d: %s at %s" % (path, i, errors[0].message, list(errors[0].path)))
            out.append(d)
    if not out:
        fail(path + " is empty")
    return out


def files_under(*roots):
    for root in roots:
        for dirpath, _, names in os.walk(root):
            for n in names:
                yield os.path.join(dirpath, n)


def assert_absent(needle, paths, blobs=()):
    """needle (bytes) occurs in none of the files and none of the (label, bytes) blobs."""
    checked = 0
    for p in paths:
        with open(p, "rb") as f:
            if needle in f.read():
                fail("secret found in " + p)
        checked += 1
    for label, blob in blobs:
        if needle in blob:
            fail("secret found in " + label)
    return checked


def names_in(d):
    """Every operator name a diagnosis line states: faulty (and parent chains), Stage I
    candidates and their parents, Stage II's list."""
    names = set()
    for f in d["faulty"]:
        names.add(f["family"])
        names.update(f["parent_chain"])
    for c in d["stage1"]["candidates"]:
        names.add(c["family"])
        if c.get("parent"):
            names.add(c["parent"])
    names.update(d["stage2"]["faulty"])
    return names
