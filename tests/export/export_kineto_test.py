#!/usr/bin/python3
"""truffld-export on real PyTorch profiler (Kineto) traces from ../shared/data/kineto: the kernel
count, total kernel time and per-name counts of the export (and of --stats-json) equal those
counted directly in the Kineto JSON (cat "kernel", dur in µs read as exact decimals).

A kernel whose correlation id has no launching cuda_runtime/cuda_driver event in the file is
not in the merge's trees (truffld-merge reports it as unlinked), so it is left out of the
Kineto-side count too; the two files with every device op linked compare the whole file.
Skips (reported as skipped, exit 77) when the data folder is absent. Binaries from
TRUFFLD_MERGE and TRUFFLD_EXPORT, data from TRUFFLD_SHARED_DATA, work folder TRUFFLD_WORK.
"""
import collections
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import unittest
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, ".."))  # truffld_unittest
import truffld_unittest  # noqa: E402

MERGE = os.environ.get("TRUFFLD_MERGE", "")
EXPORT = os.environ.get("TRUFFLD_EXPORT", "")
DATA = os.path.join(os.environ.get("TRUFFLD_SHARED_DATA", os.path.join(HERE, "..", "..", "..", "shared", "data")),
                    "kineto")
WORK = os.environ.get("TRUFFLD_WORK", "/tmp/truffld-export-kineto")
FILES = ("vllm_gpt-oss_b200_tp8_rank0.json.gz", "hta_sampled_rank-0.json.gz", "hf_qwen1.5-0.5b_h100.json.gz")


def kineto_kernels(path):
    """(count, total ns, Counter of names) of the kernels with a launching API event."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=Decimal)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    launched = {e["args"]["correlation"] for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"
               and e.get("args", {}).get("correlation") in launched]
    return (len(kernels), sum(int(Decimal(e["dur"]) * 1000) for e in kernels),
            collections.Counter(e["name"] for e in kernels))


class ExportKineto(unittest.TestCase):
    def setUp(self):
        if not os.path.isdir(DATA):
            self.skipTest("no real traces: %s is absent (see ../shared/data/README.md)" % DATA)
        os.makedirs(WORK, exist_ok=True)

    def check(self, name):
        path = os.path.join(DATA, name)
        if not os.path.exists(path):
            self.skipTest("%s is absent" % path)
        merged = os.path.join(WORK, name + ".merged")
        db = os.path.join(WORK, name + ".sqlite")
        stats = os.path.join(WORK, name + ".stats.json")
        shutil.rmtree(merged, ignore_errors=True)
        subprocess.run([MERGE, path, "-o", merged, "-q", "--no-trace-json"], check=True,
                       stderr=subprocess.DEVNULL)
        subprocess.run([EXPORT, merged, "-o", db, "-q", "--stats-json", stats], check=True)
        count, total, names = kineto_kernels(path)
        self.assertGreater(count, 100)
        con = sqlite3.connect(db)
        try:
            self.assertEqual(con.execute("SELECT COUNT(*), SUM(duration_ns) FROM kernels").fetchone(), (count, total))
            got = collections.Counter(dict(con.execute("SELECT name, COUNT(*) FROM kernels GROUP BY name")))
        finally:
            con.close()
        self.assertEqual(got, names)
        with open(stats, encoding="utf-8") as f:
            s = json.load(f)
        self.assertEqual((s["kernels"], s["kernel_total_ns"]), (count, total))
        self.assertEqual({k["name"]: k["count"] for k in s["kernel_summary"]}, dict(names))

    def test_vllm_b200(self):
        self.check(FILES[0])

    def test_hta_sampled_rank0(self):
        self.check(FILES[1])

    def test_hf_qwen_with_unlinked_kernels(self):
        self.check(FILES[2])


if __name__ == "__main__":
    truffld_unittest.main()
