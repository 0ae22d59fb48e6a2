#!/usr/bin/python3
"""truffld-merge --sqlite against truffld-export on the same merge: every table, index and view.

truffld-merge --sqlite FILE builds the run database from its trees in memory; truffld-export
builds it from the trees.jsonl the same merge wrote. Both go through merge/sqlite's RowBuilder,
but from different producers (the merge's nodes, parsed JSON), so any member one of them
reads differently shows up here: the databases must hold the same schema (sqlite_master) and
the same rows, compared row by row in id order for every table, the run table included (same
paths, version, counts and summary.json text). Inputs: synthetic runs (--preset demo and
--preset small, grouped and per-request trees, and 300k events: batches handed over and reused) and real Kineto and Nsight Systems traces of
../shared/data (their payloads, domains and unlinked device ops come from other importers;
skipped when the folder is absent). The diagnosis tables are there, empty, and
`truffld-export --db DB --diagnosis DIR` fills them: the result equals one export with
--diagnosis. Also: the database named by a planted symlink is replaced, the symlink's target
untouched; an output path in a missing directory fails the merge (exit 3) and leaves the
earlier outputs as they were; a later merge of a folder holding the database skips it as
truffld's output.
Binaries from TRUFFLD_SYNTH, TRUFFLD_MERGE, TRUFFLD_DIAGNOSE, TRUFFLD_EXPORT; work folder
TRUFFLD_WORK.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, ".."))  # truffld_unittest
import truffld_unittest  # noqa: E402

SYNTH = os.environ.get("TRUFFLD_SYNTH", "")
MERGE = os.environ.get("TRUFFLD_MERGE", "")
EXPORT = os.environ.get("TRUFFLD_EXPORT", "")
WORK = os.environ.get("TRUFFLD_WORK", "/tmp/truffld-merge-sqlite-test")
DIAG = os.environ.get("TRUFFLD_DIAGNOSE", "")
DATA = os.environ.get("TRUFFLD_SHARED_DATA", os.path.join(HERE, "..", "..", "..", "shared", "data"))
REAL = ("kineto/vllm_gpt-oss_b200_tp8_rank0.json.gz", "kineto/hta_ddp_2rank_nccl_a100.json.gz",
        "kineto/sglang_qwen3-8b_prefilldecode_mi300x.json.gz", "kineto/hf_qwen1.5-0.5b_h100.json.gz",
        "nsys/saxpy_mpi_cuda_perlmutter.sqlite")


def run(*args, check=True):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d:\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p


def version(tool):
    """What `tool --version` says after the tool's name (the run table's truffld_version)."""
    return run(tool, "--version").stdout.strip().split(" ", 1)[1]


def content(db, tool):
    """(schema rows, {table: rows in rowid order}) of a database written by `tool`; the run
    table's truffld_version is checked against the tool's own and left out (the two binaries
    may be built at different commits)."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        schema = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall()
        rows = {t: con.execute("SELECT * FROM %s ORDER BY rowid" % t).fetchall()
                for (kind, t, _, _) in schema if kind == "table"}
    finally:
        con.close()
    assert ("truffld_version", version(tool)) in rows["run"], rows["run"][:2]
    rows["run"] = [r for r in rows["run"] if r[0] != "truffld_version"]
    return schema, rows


class MergeSqlite(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)

    def merge_and_export(self, name, inputs, *merge_flags):
        """Merges `inputs` with --sqlite, exports the same merge; returns both databases' paths."""
        merged = os.path.join(WORK, name)
        db = os.path.join(merged, "run.sqlite")
        run(MERGE, *inputs, "-o", merged, "-q", "--sqlite", db, *merge_flags)
        exported = os.path.join(WORK, name + "-export.sqlite")
        run(EXPORT, merged, "-o", exported, "-q")
        return db, exported

    def assert_same_database(self, db, exported, min_kernels):
        (schema_a, rows_a), (schema_b, rows_b) = content(db, MERGE), content(exported, EXPORT)
        self.assertEqual(schema_a, schema_b)
        self.assertGreaterEqual(len(rows_a["kernel_rows"]), min_kernels)
        for table in rows_b:
            with self.subTest(table=table):
                self.assertEqual(len(rows_a[table]), len(rows_b[table]))
                for i, (a, b) in enumerate(zip(rows_a[table], rows_b[table])):
                    self.assertEqual(a, b, "%s row %d" % (table, i))
        self.assertEqual(rows_a["verdicts"], [])
        self.assertEqual(rows_a["faulty_ops"], [])

    def test_synthetic_runs(self):
        # 300k events: about 260k rows, so the merge hands several batches over and reuses them.
        for preset, flags in (("demo", ()), ("small", ()), ("small", ("--per-request-trees", "--no-trace-json")),
                              ("300000", ("--no-trace-json",))):
            with self.subTest(preset=preset, flags=flags):
                dumps = os.path.join(WORK, "dumps-" + preset)
                if not os.path.isdir(dumps):
                    size = ["--events", preset] if preset.isdigit() else ["--preset", preset]
                    run(SYNTH, *size, "--seed", "3", "-q", "--out", dumps)
                name = "merged-%s%s" % (preset, "-per-request" if "--per-request-trees" in flags else "")
                db, exported = self.merge_and_export(name, [dumps], *flags)
                self.assert_same_database(db, exported, 100)
                con = sqlite3.connect(db)
                try:
                    groups = con.execute("SELECT COUNT(*) FROM collective_groups").fetchone()[0]
                    dup = con.execute("SELECT value FROM run WHERE key = 'duplicate_nodes'").fetchone()[0]
                finally:
                    con.close()
                self.assertGreater(groups, 0)
                if "--per-request-trees" in flags:
                    self.assertGreater(int(dup), 0)  # per-request lines repeat the shared nodes

    def test_real_traces(self):
        found = [p for p in (os.path.join(DATA, r) for r in REAL) if os.path.exists(p)]
        if not found:
            self.skipTest("no real traces under %s (see ../shared/data/README.md)" % DATA)
        for path in found:
            with self.subTest(trace=path):
                name = "real-" + os.path.basename(path).split(".")[0]
                db, exported = self.merge_and_export(name, [path], "--no-trace-json")
                self.assert_same_database(db, exported, 1)

    def test_diagnosis_added_to_the_merge_database(self):
        # merge --sqlite, then export --db DB --diagnosis: the same database as one export
        # with --diagnosis, run table included; a second --diagnosis is refused, DB unchanged.
        dumps = os.path.join(WORK, "dumps-diag")
        run(SYNTH, "--preset", "small", "--seed", "4", "-q", "--out", dumps)
        merged, diag = os.path.join(WORK, "merged-diag"), os.path.join(WORK, "diag")
        db = os.path.join(merged, "run.sqlite")
        run(MERGE, dumps, "-o", merged, "-q", "--no-trace-json", "--sqlite", db)
        run(DIAG, merged, "-o", diag, "--llm", "off", "-q", "--no-html")
        run(EXPORT, "--db", db, "--diagnosis", diag, "-q")
        full = os.path.join(WORK, "diag-export.sqlite")
        run(EXPORT, merged, "--diagnosis", diag, "-o", full, "-q")
        got, want = content(db, MERGE), content(full, EXPORT)
        self.assertGreater(len(want[1]["verdicts"]), 0)
        self.assertGreater(len(want[1]["faulty_ops"]), 0)
        self.assertEqual(got[0], want[0])
        for table in want[1]:
            with self.subTest(table=table):
                self.assertEqual(got[1][table], want[1][table])
        p = run(EXPORT, "--db", db, "--diagnosis", diag, "-q", check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("already holds a diagnosis", p.stderr)
        self.assertEqual(content(db, MERGE), got)

    def test_run_database_in_an_input_folder_is_skipped(self):
        # The header's application id marks truffld's database: a later merge of a folder that
        # holds one lists it as truffld's output, not as a broken Nsight Systems export.
        dumps = os.path.join(WORK, "dumps-with-db")
        run(SYNTH, "--preset", "demo", "--seed", "6", "-q", "--out", dumps)
        run(MERGE, dumps, "-o", os.path.join(WORK, "merged-first"), "-q", "--no-trace-json",
            "--sqlite", os.path.join(dumps, "run.sqlite"))
        again = os.path.join(WORK, "merged-again")
        run(MERGE, dumps, "-o", again, "-q", "--no-trace-json")
        with open(os.path.join(again, "summary.json"), encoding="utf-8") as f:
            summary = json.load(f)
        kinds = {os.path.basename(s["path"]): s["kind"] for s in summary["skipped_inputs"]}
        self.assertEqual(kinds.get("run.sqlite"), "truffld_output", summary["skipped_inputs"])
        self.assertEqual(summary["failed_inputs"], [])

    def test_planted_symlink_is_replaced_not_followed(self):
        dumps = os.path.join(WORK, "dumps-tiny")
        run(SYNTH, "--preset", "demo", "--seed", "5", "-q", "--out", dumps)
        target = os.path.join(WORK, "victim.txt")
        with open(target, "w") as f:
            f.write("do not overwrite me\n")
        merged = os.path.join(WORK, "merged-linked")
        os.makedirs(merged)
        out = os.path.join(merged, "run.sqlite")
        os.symlink(target, out)
        run(MERGE, dumps, "-o", merged, "-q", "--no-trace-json", "--sqlite", out)
        self.assertFalse(os.path.islink(out))
        with open(target) as f:
            self.assertEqual(f.read(), "do not overwrite me\n")
        self.assertEqual([n for n in os.listdir(merged) if ".tmp-" in n], [])
        # An unwritable database path: exit 3, the earlier outputs kept, no temporary file left.
        before = os.path.getmtime(os.path.join(merged, "trees.jsonl"))
        bad = os.path.join(WORK, "no-such-dir", "run.sqlite")
        p = run(MERGE, dumps, "-o", merged, "-q", "--no-trace-json", "--sqlite", bad, check=False)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("no-such-dir", p.stderr)
        self.assertEqual(os.path.getmtime(os.path.join(merged, "trees.jsonl")), before)
        self.assertEqual([n for n in os.listdir(merged) if ".tmp-" in n], [])


if __name__ == "__main__":
    truffld_unittest.main()
