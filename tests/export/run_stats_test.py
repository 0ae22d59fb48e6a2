#!/usr/bin/python3
"""truffld-merge's run_stats.json against truffld-export's SQL (--stats-json): the same figures,
computed twice by independent code (a walk over the merge's trees in C++, window-function SQL
over the exported tables), must agree exactly (integers) and to 1e-9 (shares, averages) on
synthetic runs (tensor-parallel, with NCCL kernels) and on every real trace in ../shared/data
(Kineto and Nsight Systems; that case skips visibly when the folder is absent). run_stats.json
validates against schemas/stats-summary.schema.json, and truffld-diagnose shows it in
report.html ("Run statistics"); a damaged run_stats.json is a note in the report, not a failure.
Binaries from TRUFFLD_SYNTH, TRUFFLD_MERGE, TRUFFLD_DIAGNOSE and TRUFFLD_EXPORT, work folder TRUFFLD_WORK.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, ".."))  # truffld_unittest
import truffld_unittest  # noqa: E402

SYNTH, MERGE = os.environ.get("TRUFFLD_SYNTH", ""), os.environ.get("TRUFFLD_MERGE", "")
DIAGNOSE, EXPORT = os.environ.get("TRUFFLD_DIAGNOSE", ""), os.environ.get("TRUFFLD_EXPORT", "")
SOURCE = os.environ.get("TRUFFLD_SOURCE_DIR", os.path.join(HERE, "..", ".."))
DATA = os.environ.get("TRUFFLD_SHARED_DATA", os.path.join(SOURCE, "..", "shared", "data"))
WORK = os.environ.get("TRUFFLD_WORK", "/tmp/truffld-run-stats")


def differences(a, b, path=""):
    """Where two JSON values differ: exact for everything but floats (1e-9 relative)."""
    if isinstance(a, float) or isinstance(b, float):
        ok = isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= 1e-9 * max(1.0, abs(a))
        return [] if ok else ["%s: %r vs %r" % (path, a, b)]
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return ["%s: keys %s vs %s" % (path, sorted(a), sorted(b))]
        return [d for k in a for d in differences(a[k], b[k], "%s.%s" % (path, k))]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return ["%s: %d vs %d items" % (path, len(a), len(b))]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, "%s[%d]" % (path, i))]
    return [] if a == b else ["%s: %r vs %r" % (path, a, b)]


def merge_and_export(inputs, base):
    shutil.rmtree(base, ignore_errors=True)
    merged = os.path.join(base, "merged")
    subprocess.run([MERGE, *inputs, "-o", merged, "-q", "--no-trace-json"], check=True, stderr=subprocess.DEVNULL)
    sql = os.path.join(base, "sql_stats.json")
    subprocess.run([EXPORT, merged, "-o", os.path.join(base, "run.sqlite"), "-q", "--stats-json", sql], check=True)
    with open(os.path.join(merged, "run_stats.json"), encoding="utf-8") as f:
        mine = json.load(f)
    with open(sql, encoding="utf-8") as f:
        theirs = json.load(f)
    return merged, mine, theirs


class RunStatsAgree(unittest.TestCase):
    def setUp(self):
        for b in (SYNTH, MERGE, DIAGNOSE, EXPORT):
            self.assertTrue(b and os.access(b, os.X_OK), "binary missing: %r" % b)
        jsonschema = truffld_unittest.require("jsonschema", "python3-jsonschema")
        with open(os.path.join(SOURCE, "schemas", "stats-summary.schema.json"), encoding="utf-8") as f:
            self.validator = jsonschema.Draft202012Validator(json.load(f))

    def agree(self, inputs, base):
        merged, mine, theirs = merge_and_export(inputs, base)
        errors = [e.message for e in self.validator.iter_errors(mine)]
        self.assertEqual(errors, [], errors[:3])
        diffs = differences(mine, theirs)
        self.assertEqual(diffs, [], "%s: run_stats.json differs from the SQL: %s" % (base, diffs[:5]))
        return merged, mine

    def test_synthetic_tensor_parallel(self):
        for seed, extra in ((3, []), (5, ["--ranks", "4", "--hosts", "2", "--pp", "2"])):
            base = os.path.join(WORK, "synth%d" % seed)
            dump = os.path.join(base + ".dump")
            shutil.rmtree(dump, ignore_errors=True)
            subprocess.run([SYNTH, "--preset", "small", "--seed", str(seed), *extra, "-q", "--out", dump], check=True)
            merged, mine = self.agree(sorted(glob.glob(os.path.join(dump, "truffld-*.jsonl*"))), base)
            self.assertGreater(mine["kernels"], 1000)
            self.assertTrue(any(o["comm_ns"] > 0 for o in mine["overlap"]), "no communication kernel found")
            if seed == 3:
                self.check_report(merged, mine)

    def check_report(self, merged, mine):
        diag = os.path.join(WORK, "diag")
        subprocess.run([DIAGNOSE, merged, "-o", diag, "--llm", "off", "-q"], check=True)
        with open(os.path.join(diag, "report.html"), encoding="utf-8") as f:
            html = f.read()
        self.assertIn("id='run-stats'", html)
        self.assertIn("%d kernels" % mine["kernels"], html)
        with open(os.path.join(merged, "run_stats.json"), "w", encoding="utf-8") as f:
            f.write('{"schema": "truffld.stats-summary/1", "kernels": "many"}')
        p = subprocess.run([DIAGNOSE, merged, "-o", diag, "--llm", "off", "-q"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr[-500:])
        with open(os.path.join(diag, "report.html"), encoding="utf-8") as f:
            html = f.read()
        self.assertNotIn("id='run-stats'", html)
        self.assertIn("run_stats.json: &quot;kernels&quot; must be an integer", html)

    def test_real_traces(self):
        files = sorted(glob.glob(os.path.join(DATA, "kineto", "*.json*")) + glob.glob(os.path.join(DATA, "nsys", "*.sqlite")))
        if not files:
            self.skipTest("no real traces: %s holds none (see ../shared/data/README.md)" % DATA)
        for path in files:
            with self.subTest(trace=os.path.basename(path)):
                self.agree([path], os.path.join(WORK, "real", os.path.basename(path)))


if __name__ == "__main__":
    truffld_unittest.main()
