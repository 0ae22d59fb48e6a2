#!/usr/bin/python3
"""truffld-export end to end on a synthetic run: synth -> merge -> diagnose --llm off -> export.

The database is queried with sqlite3 and pandas.read_sql; its row counts are compared with
counts made independently from trees.jsonl (tree_counts.py), its indexes are listed, and the
summaries (--stats-json, validated against schemas/stats-summary.schema.json) are recomputed by
hand in Python. Bad input: a truncated trees.jsonl (named by file and line, the rest exported),
a missing directory (exit 1), an output path holding a planted symlink (replaced, its target
untouched), an output directory that does not exist (exit 3).
Binaries from TRUFFLD_SYNTH, TRUFFLD_MERGE, TRUFFLD_DIAGNOSE, TRUFFLD_EXPORT; work folder from
TRUFFLD_WORK. Run with Debian's python3 (sqlite3, pandas, jsonschema).
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
sys.path.append(HERE)
import truffld_unittest  # noqa: E402
import tree_counts  # noqa: E402

SYNTH = os.environ.get("TRUFFLD_SYNTH", "")
MERGE = os.environ.get("TRUFFLD_MERGE", "")
DIAG = os.environ.get("TRUFFLD_DIAGNOSE", "")
EXPORT = os.environ.get("TRUFFLD_EXPORT", "")
WORK = os.environ.get("TRUFFLD_WORK", "/tmp/truffld-export-test")
ROOT = os.environ.get("TRUFFLD_SOURCE_DIR", os.path.join(HERE, "..", ".."))

TABLES = {"steps": "steps", "requests": "requests", "ops": "op", "api_calls": "call",
          "kernels": "kernel", "copies": "copy", "syncs": "sync", "collectives": "collectives"}
INDEXES = {"steps_rank_step", "requests_request", "requests_step", "op_rows_step", "op_rows_family",
           "call_rows_step", "kernel_rows_step", "kernel_rows_name", "copy_rows_step", "collectives_comm",
           "verdicts_unit", "faulty_ops_verdict", "faulty_ops_family"}


def run(*args, check=True):
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d:\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p


class ExportSynthetic(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        cls.dumps, cls.merged, cls.diag = (os.path.join(WORK, d) for d in ("dumps", "merged", "diag"))
        cls.db = os.path.join(WORK, "run.sqlite")
        cls.stats_json = os.path.join(WORK, "stats-summary.json")
        run(SYNTH, "--preset", "small", "--seed", "3", "-q", "--out", cls.dumps)
        run(MERGE, cls.dumps, "-o", cls.merged, "-q", "--no-trace-json")
        run(DIAG, cls.merged, "-o", cls.diag, "--llm", "off", "-q", "--no-html")
        cls.export = run(EXPORT, cls.merged, "--diagnosis", cls.diag, "-o", cls.db, "--stats",
                         "--stats-json", cls.stats_json)
        cls.hand = tree_counts.count_trees(os.path.join(cls.merged, "trees.jsonl"))
        with open(cls.stats_json, encoding="utf-8") as f:
            cls.stats = json.load(f)

    def query(self, sql):
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()

    def test_row_counts_match_the_trees(self):
        h = self.hand
        self.assertGreater(h["kernel"], 100)
        self.assertGreater(h["collectives"], 0)
        for table, key in TABLES.items():
            with self.subTest(table=table):
                self.assertEqual(self.query("SELECT COUNT(*) FROM " + table)[0][0], h[key])
        self.assertEqual(self.query("SELECT SUM(duration_ns) FROM kernels")[0][0], h["kernel_ns"])
        self.assertEqual(self.query("SELECT value FROM run WHERE key = 'bad_tree_lines'")[0][0], "0")

    def test_pandas_reads_the_tables(self):
        pandas = truffld_unittest.require("pandas", "python3-pandas")
        con = sqlite3.connect(self.db)
        try:
            k = pandas.read_sql("SELECT k.*, s.rank FROM kernels k JOIN steps s USING (step_id)", con)
            ops = pandas.read_sql("SELECT * FROM ops", con)
        finally:
            con.close()
        self.assertEqual(len(k), self.hand["kernel"])
        self.assertEqual(int(k["duration_ns"].sum()), self.hand["kernel_ns"])
        self.assertTrue((k["end_ns"] - k["start_ns"] == k["duration_ns"]).all())
        self.assertEqual(len(ops), self.hand["op"])
        self.assertTrue(set(ops["layer"]) <= {"frontend_op", "backend_op", "comm", "other"})

    def test_indexes_and_views_exist(self):
        names = {r[0] for r in self.query("SELECT name FROM sqlite_master WHERE type = 'index'")}
        self.assertTrue(INDEXES <= names, INDEXES - names)
        views = {r[0] for r in self.query("SELECT name FROM sqlite_master WHERE type = 'view'")}
        self.assertEqual(views, {"ops", "api_calls", "kernels", "copies", "syncs", "device_activity",
                                 "collective_groups"})
        name = self.query("SELECT name FROM kernels LIMIT 1")[0][0]
        plan = " ".join(r[3] for r in self.query(
            "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM kernels WHERE name = '%s'" % name.replace("'", "''")))
        self.assertIn("kernel_rows_name", plan)
        self.assertEqual(self.query("SELECT COUNT(*) FROM kernels WHERE name = '%s'" % name.replace("'", "''"))[0][0],
                         self.query("SELECT COUNT(*) FROM kernel_rows k JOIN strings s ON s.string_id = k.name_id"
                                    " WHERE s.text = '%s'" % name.replace("'", "''"))[0][0])

    def test_diagnosis_tables(self):
        verdicts = faulty = 0
        with open(os.path.join(self.diag, "diagnosis.jsonl"), encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                verdicts += 1
                faulty += len(d["faulty"])
        self.assertGreater(faulty, 0)
        self.assertEqual(self.query("SELECT COUNT(*) FROM verdicts")[0][0], verdicts)
        self.assertEqual(self.query("SELECT COUNT(*) FROM faulty_ops")[0][0], faulty)
        self.assertEqual(self.query("SELECT COUNT(*) FROM verdicts WHERE step_id IS NULL")[0][0], 0)
        self.assertEqual(self.query("SELECT COUNT(*) FROM verdicts WHERE label = 'abnormal'")[0][0],
                         self.query("SELECT COUNT(DISTINCT verdict_id) FROM faulty_ops")[0][0])

    def test_collective_groups_name_every_rank(self):
        # --preset small: two tensor-parallel ranks, every collective entered by both.
        rows = self.query("SELECT participants, world_size, ranks FROM collective_groups")
        self.assertGreater(len(rows), 0)
        self.assertEqual({(p, w) for p, w, _ in rows}, {(2, 2)})
        self.assertEqual({tuple(sorted(r.split(","))) for _, _, r in rows}, {("0", "1")})

    def test_stats_json_matches_the_schema(self):
        jsonschema = truffld_unittest.require("jsonschema", "python3-jsonschema")
        with open(os.path.join(ROOT, "schemas", "stats-summary.schema.json"), encoding="utf-8") as f:
            jsonschema.Draft202012Validator(json.load(f)).validate(self.stats)

    def test_stats_against_hand_counts(self):
        s, h = self.stats, self.hand
        self.assertEqual(s["kernels"], h["kernel"])
        self.assertEqual(s["kernel_total_ns"], h["kernel_ns"])
        self.assertEqual(sum(k["count"] for k in s["kernel_summary"]), h["kernel"])
        self.assertEqual(sum(l["count"] for l in s["launch_latency"]), len(h["latency"]))
        by_api = {}
        for api, v in h["latency"]:
            by_api.setdefault(api, []).append(v)
        for l in s["launch_latency"]:
            v = sorted(by_api[l["api"]])
            self.assertEqual(l["p50_ns"], v[(len(v) + 1) // 2 - 1])
            self.assertEqual((l["min_ns"], l["max_ns"]), (v[0], v[-1]))
        idle = {(r["rank"], r["step_index"]): r for r in s["step_idle"]}
        for (rank, _pid, index), (a, b, detail) in h["step_span"].items():
            if not detail or b <= a:
                continue
            clipped = [(max(x, a), min(y, b)) for x, y in h["step_device"][(rank, _pid, index)]]
            self.assertEqual(idle[(rank, index)]["busy_ns"], tree_counts.union_ns(clipped))
        for r in s["overlap"]:
            ks = h["rank_kernels"][r["rank"]]
            comp = [(a, b) for a, b, m in ks if not m]
            comm = [(a, b) for a, b, m in ks if m]
            self.assertEqual(r["compute_ns"], tree_counts.union_ns(comp))
            self.assertEqual(r["comm_ns"], tree_counts.union_ns(comm))
            self.assertEqual(r["overlap_ns"], tree_counts.intersect_ns(comp, comm))

    def test_stats_text(self):
        out = self.export.stdout
        for title in ("Kernel time summary", "GPU idle share per step", "Launch latency",
                      "Compute/communication overlap per rank"):
            self.assertIn(title, out)
        again = run(EXPORT, "--db", self.db, "--stats")
        self.assertEqual(again.stdout, out)

    def test_per_request_trees_give_the_same_rows(self):
        per_request = os.path.join(WORK, "merged-per-request")
        run(MERGE, self.dumps, "-o", per_request, "-q", "--no-trace-json", "--per-request-trees")
        db = os.path.join(WORK, "per-request.sqlite")
        p = run(EXPORT, per_request, "-o", db)
        self.assertNotIn(" 0 repeated nodes merged", p.stderr)
        con = sqlite3.connect(db)
        try:
            for table, key in TABLES.items():
                with self.subTest(table=table):
                    self.assertEqual(con.execute("SELECT COUNT(*) FROM " + table).fetchone()[0], self.hand[key])
            self.assertEqual(con.execute("SELECT SUM(duration_ns) FROM kernels").fetchone()[0], self.hand["kernel_ns"])
        finally:
            con.close()

    def test_thread_counts_give_the_same_database(self):
        # 1 writer: every table in the output; 2 and 3 writers: groups of tables in temporary
        # files beside it, copied in; the rows, indexes and views must not depend on it.
        def content(db):
            con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
            try:
                schema = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall()
                rows = {t: con.execute("SELECT * FROM %s ORDER BY rowid" % t).fetchall()
                        for (kind, t, _, _) in schema if kind == "table" and t != "run"}
                return schema, rows
            finally:
                con.close()
        out = os.path.join(WORK, "threads")
        os.makedirs(out, exist_ok=True)
        got = {}
        for threads in ("1", "2", "3", "4", "16"):
            db = os.path.join(out, "t%s.sqlite" % threads)
            run(EXPORT, self.merged, "--diagnosis", self.diag, "-o", db, "-q", "--threads", threads)
            got[threads] = content(db)
            self.assertEqual([n for n in os.listdir(out) if ".tmp-" in n], [], threads)
        self.assertGreater(len(got["1"][1]["kernel_rows"]), 100)
        for threads in ("2", "3", "4", "16"):
            with self.subTest(threads=threads):
                self.assertEqual(got[threads][0], got["1"][0])
                for table, rows in got["1"][1].items():
                    self.assertEqual(got[threads][1][table], rows, table)

    def test_truncated_trees_are_named_and_the_rest_exported(self):
        cut = os.path.join(WORK, "cut")
        os.makedirs(cut, exist_ok=True)
        with open(os.path.join(self.merged, "trees.jsonl"), "rb") as f:
            data = f.read()
        lines = data.count(b"\n")
        with open(os.path.join(cut, "trees.jsonl"), "wb") as f:
            f.write(data[:len(data) - 200])
        db = os.path.join(WORK, "cut.sqlite")
        p = run(EXPORT, cut, "-o", db)
        self.assertRegex(p.stderr, r"trees\.jsonl:%d: not a JSON object" % lines)
        self.assertIn("no summary.json", p.stderr)
        con = sqlite3.connect(db)
        try:
            self.assertEqual(con.execute("SELECT value FROM run WHERE key = 'bad_tree_lines'").fetchone()[0], "1")
            self.assertIn("trees.jsonl:%d:" % lines,
                          con.execute("SELECT value FROM run WHERE key = 'problems'").fetchone()[0])
            self.assertGreater(con.execute("SELECT COUNT(*) FROM kernels").fetchone()[0], 0)
        finally:
            con.close()

    def test_missing_and_empty_inputs(self):
        p = run(EXPORT, os.path.join(WORK, "nope"), "-o", os.path.join(WORK, "x.sqlite"), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("nope: no such file or directory", p.stderr)
        empty = os.path.join(WORK, "empty")
        os.makedirs(empty, exist_ok=True)
        with open(os.path.join(empty, "trees.jsonl"), "w") as f:
            f.write("not json\n")
        p = run(EXPORT, empty, "-o", os.path.join(WORK, "x.sqlite"), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("trees.jsonl:1: not a JSON object", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(WORK, "x.sqlite")))
        p = run(EXPORT, self.merged, "--diagnosis", empty, "-o", os.path.join(WORK, "x.sqlite"), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no diagnosis.jsonl", p.stderr)
        corrupt = os.path.join(WORK, "corrupt")
        os.makedirs(corrupt, exist_ok=True)
        with open(os.path.join(corrupt, "trees.jsonl.gz"), "wb") as f:
            f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\xff" * 64)
        p = run(EXPORT, corrupt, "-o", os.path.join(WORK, "x.sqlite"), check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("trees.jsonl.gz", p.stderr)
        p = run(EXPORT, self.merged, "-o", os.path.join(WORK, "no-dir", "x.sqlite"), check=False)
        self.assertEqual(p.returncode, 3)
        self.assertEqual(run(EXPORT, self.merged, check=False).returncode, 2)
        not_db = os.path.join(WORK, "not.sqlite")
        with open(not_db, "w") as f:
            f.write("not a database\n")
        p = run(EXPORT, "--db", not_db, "--stats", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("not.sqlite: not a truffld-export database", p.stderr)

    def test_planted_symlink_is_replaced_not_followed(self):
        target = os.path.join(WORK, "victim.txt")
        with open(target, "w") as f:
            f.write("do not overwrite me\n")
        out = os.path.join(WORK, "linked.sqlite")
        if os.path.lexists(out):
            os.unlink(out)
        os.symlink(target, out)
        run(EXPORT, self.merged, "-o", out, "-q")
        self.assertFalse(os.path.islink(out))
        with open(target) as f:
            self.assertEqual(f.read(), "do not overwrite me\n")
        self.assertEqual([n for n in os.listdir(WORK) if ".tmp-" in n], [])
        con = sqlite3.connect(out)
        try:
            self.assertEqual(con.execute("SELECT value FROM run WHERE key = 'schema'").fetchone()[0],
                             "truffld.sqlite/1")
        finally:
            con.close()


if __name__ == "__main__":
    truffld_unittest.main()
