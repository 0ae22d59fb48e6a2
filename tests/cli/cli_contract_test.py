#!/usr/bin/python3
"""The command-line contract of truffld-merge, truffld-diagnose and truffld-synth, run as a user
would (ctest entry cli_contract; binaries from TRUFFLD_MERGE, TRUFFLD_DIAGNOSE, TRUFFLD_SYNTH).

  * exit statuses: 0 success; 1 an input could not be used (missing, unreadable, nothing to
    read); 2 usage error (bad flag or value, CLI11's own 105/106/109 included); 3 an output could
    not be written (an -o that cannot be created, a full disk); --help states them;
  * --version everywhere; -q prints nothing on success;
  * outputs never follow a planted symlink, are created 0640, are atomic (a failed run leaves
    the earlier outputs and no temporary file), and a run that does not write an output removes
    the earlier run's copy (trace.json after --no-trace-json, report.html after --no-html);
  * trace names with ESC/BEL reach the terminal escaped, and the diagnose table keeps one entry
    per line of bounded width with the right nouns;
  * --llm-url credentials never reach stats.json, report.html or messages; a dead endpoint trips
    the circuit breaker instead of costing every step its retries.
"""
import gzip
import json
import os
import pty
import re
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import unittest

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # truffld_unittest
import truffld_unittest  # noqa: E402

MERGE = os.environ.get("TRUFFLD_MERGE", "")
DIAG = os.environ.get("TRUFFLD_DIAGNOSE", "")
SYNTH = os.environ.get("TRUFFLD_SYNTH", "")
VERSION = re.compile(r"^truffld-(merge|diagnose|synth) \d+\.\d+\.\d+( \(git [^)]+\))?\n$")
TARGET_TEXT = b"do not overwrite me\n"


def run(cmd, limit_file_bytes=None, env=None, timeout=300):
    def limit():
        if limit_file_bytes is not None:  # a full disk, as seen by the writer: EFBIG
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_bytes, limit_file_bytes))
    return subprocess.run([str(c) for c in cmd], capture_output=True, env=env, timeout=timeout,
                          preexec_fn=limit)


def text(p):
    return p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")


LOCK = ".truffld.lock"  # the output lock (truffld/output_lock.h): a run's holder line, not an output


def outputs(folder):
    """The names in an output folder, sorted, without the output lock."""
    return sorted(n for n in os.listdir(folder) if n != LOCK)


def contents(folder):
    """{name: bytes} of every file in `folder` but the output lock."""
    out = {}
    for name in outputs(folder):
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = f.read()
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Fixture:
    """One synth dump and its merge, shared by the tests (made once: about a second)."""
    tmp = None

    @classmethod
    def get(cls):
        if cls.tmp is None:
            cls.tmp = tempfile.TemporaryDirectory(prefix="truffld_cli_")
            root = cls.tmp.name
            for cmd in ([SYNTH, "--preset", "demo", "--out", os.path.join(root, "dump"), "-q"],
                        [MERGE, os.path.join(root, "dump"), "-o", os.path.join(root, "merged"), "-q"]):
                p = run(cmd)
                if p.returncode != 0:
                    raise AssertionError("fixture failed: %s\n%s" % (cmd, text(p)))
        return cls.tmp.name


class CliCase(unittest.TestCase):
    def setUp(self):
        for name, path in (("truffld-merge", MERGE), ("truffld-diagnose", DIAG), ("truffld-synth", SYNTH)):
            if not path or not os.access(path, os.X_OK):
                self.fail("%s not built (set TRUFFLD_MERGE, TRUFFLD_DIAGNOSE, TRUFFLD_SYNTH)" % name)
        self.root = Fixture.get()
        self.work = tempfile.TemporaryDirectory(prefix="truffld_cli_case_")
        self.addCleanup(self.work.cleanup)
        self.dir = self.work.name

    def expect(self, cmd, rc, *needles, **kw):
        p = run(cmd, **kw)
        self.assertEqual(rc, p.returncode, "%s\n%s" % (" ".join(map(str, cmd)), text(p)))
        for n in needles:
            self.assertIn(n, text(p))
        return p

    def plant_links(self, out, names):
        os.makedirs(out, exist_ok=True)
        target = os.path.join(self.dir, "target.txt")
        with open(target, "wb") as f:
            f.write(TARGET_TEXT)
        for n in names:
            os.symlink(target, os.path.join(out, n))
        return target

    def assert_safe_outputs(self, out, names, target):
        with open(target, "rb") as f:
            self.assertEqual(TARGET_TEXT, f.read(), "a planted symlink's target was written")
        for n in names:
            st = os.lstat(os.path.join(out, n))
            self.assertTrue(stat.S_ISREG(st.st_mode), n + " is not a regular file")
            self.assertEqual(0, stat.S_IMODE(st.st_mode) & ~0o640, "%s: mode %o" % (n, st.st_mode))
            self.assertEqual(0o600, stat.S_IMODE(st.st_mode) & 0o600, "%s: mode %o" % (n, st.st_mode))

    def assert_no_temporaries(self, out):
        left = [n for n in os.listdir(out) if ".tmp-" in n] if os.path.isdir(out) else []
        self.assertEqual([], left, "temporary files left behind")


class Common(CliCase):
    def test_version_and_help_everywhere(self):
        for tool in (MERGE, DIAG, SYNTH):
            p = self.expect([tool, "--version"], 0)
            self.assertRegex(p.stdout.decode(), VERSION)
            p = self.expect([tool, "--help"], 0)
            # The program's name, not the path it was started by.
            self.assertIn("Usage: %s [OPTIONS]" % os.path.basename(tool), p.stdout.decode())
            self.assertIn("Exit status: 0 success; 1 an input could not be used", p.stdout.decode())
            self.assertIn("3 an output could not be written", p.stdout.decode())

    def test_progress_only_on_a_terminal(self):
        def stderr_on_tty(cmd):
            master, slave = pty.openpty()
            p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=slave, timeout=300)
            os.close(slave)
            data = b""
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO once the child's side is closed
                    break
                if not chunk:
                    break
                data += chunk
            os.close(master)
            self.assertEqual(0, p.returncode, data)
            return data
        merged = os.path.join(self.root, "merged")
        for cmd in ([MERGE, os.path.join(self.root, "dump"), "-o", os.path.join(self.dir, "m")],
                    [DIAG, merged, "-o", os.path.join(self.dir, "d"), "--llm", "off"]):
            self.assertIn(b"\r\x1b[K", stderr_on_tty(cmd), cmd)
            self.assertEqual(b"", stderr_on_tty(cmd + ["-q"]), cmd)
            self.assertNotIn(b"\x1b", run(cmd).stderr, cmd)  # a pipe: no progress line

    def test_usage_errors_exit_2(self):
        dump = os.path.join(self.root, "dump")
        for cmd in ([MERGE, "--bogus", dump, "-o", self.dir],               # CLI11 109
                    [MERGE, dump],                                          # 106: -o missing
                    [MERGE, dump, "-o", self.dir, "--threads", "0"],        # 105
                    [MERGE, dump, "-o", self.dir, "--threads", "two"],      # 105
                    [MERGE, dump, "-o", self.dir, "--request-regex", "("],
                    [DIAG, "--bogus", self.root, "-o", self.dir],
                    [DIAG, os.path.join(self.root, "merged")],
                    [DIAG, os.path.join(self.root, "merged"), "-o", self.dir, "--mode", "sideways"],
                    [DIAG, os.path.join(self.root, "merged"), "-o", self.dir, "--mode", "reference"],
                    [DIAG, os.path.join(self.root, "merged"), "-o", self.dir, "--llm-url", "ftp://x"],
                    [SYNTH, "--bogus", "--out", self.dir],
                    [SYNTH, "--out", self.dir, "--faults", "nonsense"],
                    [SYNTH, "--out", self.dir, "--ranks", "many"]):
            p = self.expect(cmd, 2)
            # Every message starts with the program's name ("truffld-diagnose: --out is required").
            first = p.stderr.decode("utf-8", "replace").splitlines()[:1]
            self.assertEqual([os.path.basename(cmd[0]) + ":"], [ln.split(" ")[0] for ln in first],
                             "%s: %s" % (" ".join(map(str, cmd)), first))


class Merge(CliCase):
    def test_missing_or_empty_input_exits_1(self):
        out = os.path.join(self.dir, "out")
        self.expect([MERGE, os.path.join(self.dir, "typo"), "-o", out], 1, "typo")
        self.assertFalse(os.path.exists(out), "an output directory was made for nothing")
        empty = os.path.join(self.dir, "empty")
        os.makedirs(empty)
        self.expect([MERGE, empty, "-o", out], 1, "nothing to merge")
        with open(os.path.join(empty, "notes.json"), "w") as f:
            f.write('{"not": "a trace"}\n')
        self.expect([MERGE, empty, "-o", out], 1, "nothing to merge")
        garbage = os.path.join(self.dir, "garbage.json.gz")
        with open(garbage, "wb") as f:
            f.write(b"\x1f\x8b not really gzip")
        self.expect([MERGE, garbage, "-o", out], 1, "nothing to merge")
        self.expect([MERGE, os.path.join(self.root, "merged"), "-o", out], 1, "written by truffld")

    def test_uncreatable_output_exits_3(self):
        blocker = os.path.join(self.dir, "file")
        open(blocker, "w").close()
        self.expect([MERGE, os.path.join(self.root, "dump"), "-o", os.path.join(blocker, "out")], 3, "cannot create")

    def test_strict_input_problem_exits_1(self):
        bad = os.path.join(self.dir, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"type":"NVTX_MARK","name":"m","timestamp":1,"process_id":1,"thread_id":1}\n{oops\n')
        out = os.path.join(self.dir, "out")
        self.expect([MERGE, bad, "-o", out, "--strict"], 1, "bad.jsonl:")
        self.assertFalse(os.path.exists(os.path.join(out, "trees.jsonl")))
        self.expect([MERGE, bad, "-o", out, "-q"], 0)  # without --strict: counted, merged

    def test_quiet_prints_nothing(self):
        p = self.expect([MERGE, os.path.join(self.root, "dump"), "-o", os.path.join(self.dir, "o"), "-q"], 0)
        self.assertEqual(b"", p.stdout)

    def test_planted_symlinks_are_replaced_not_followed(self):
        out = os.path.join(self.dir, "out")
        names = ["trees.jsonl", "trace.json", "summary.json", "run_stats.json"]
        target = self.plant_links(out, names)
        self.expect([MERGE, os.path.join(self.root, "dump"), "-o", out, "-q"], 0)
        self.assert_safe_outputs(out, names, target)
        self.assert_no_temporaries(out)

    def test_no_trace_json_removes_the_earlier_trace(self):
        out = os.path.join(self.dir, "out")
        self.expect([MERGE, os.path.join(self.root, "dump"), "-o", out, "-q"], 0)
        self.assertTrue(os.path.exists(os.path.join(out, "trace.json")))
        self.expect([MERGE, os.path.join(self.root, "dump"), "-o", out, "-q", "--no-trace-json"], 0)
        self.assertEqual(["run_stats.json", "summary.json", "trees.jsonl"], outputs(out))

    def test_full_disk_exits_3_and_keeps_the_earlier_outputs(self):
        out = os.path.join(self.dir, "out")
        self.expect([MERGE, os.path.join(self.root, "dump"), "-o", out, "-q"], 0)
        before = contents(out)
        for flags in ([], ["--no-direct-io"], ["--threads", "1"]):
            self.expect([MERGE, os.path.join(self.root, "dump"), "-o", out, "-q"] + flags, 3,
                        limit_file_bytes=1 << 20)
            self.assertEqual(before, contents(out))

    def test_remerging_a_directory_with_earlier_outputs_counts_nothing_twice(self):
        dump = os.path.join(self.dir, "dump")
        subprocess.run(["cp", "-r", os.path.join(self.root, "dump"), dump], check=True)
        subprocess.run(["cp", "-r", os.path.join(self.root, "merged"), os.path.join(dump, "merged")], check=True)
        first = sorted(n for n in os.listdir(dump) if n.startswith("truffld-"))[0]
        subprocess.run(["gzip", "-k", os.path.join(dump, first)], check=True)
        out = os.path.join(self.dir, "out")
        p = self.expect([MERGE, dump, os.path.join(dump, first), "-o", out, "-q"], 0)
        err = p.stderr.decode()
        self.assertIn("trace.json written by truffld", err)
        self.assertIn("the same dump as", err)
        with open(os.path.join(out, "summary.json")) as f:
            got = json.load(f)
        with open(os.path.join(self.root, "merged", "summary.json")) as f:
            want = json.load(f)
        self.assertEqual(want["total"]["steps"], got["total"]["steps"])
        self.assertEqual(want["total"]["kernels_read"], got["total"]["kernels_read"])
        # not traces: the generator's ledger, labels, request ledger and summary; truffld's own:
        # the earlier merge's trees.jsonl, trace.json, summary.json and run_stats.json
        self.assertEqual({"not_a_trace": 4, "truffld_output": 4, "duplicate": 2, "not_a_regular_file": 0},
                         got["skipped_by_kind"])

    def test_control_bytes_in_names_reach_stderr_escaped(self):
        evil = os.path.join(self.dir, "evil\x1b]0;owned\x07\x1b[2J.jsonl")
        with open(evil, "w") as f:
            f.write('{"type":"NVTX_PUSH","name":"x\\u001b[31m","timestamp":1,"process_id":1,"thread_id":1}\n{oops\n')
        p = self.expect([MERGE, evil, os.path.join(self.root, "dump"), "-o", os.path.join(self.dir, "o"), "-q"], 0)
        self.assertNotRegex(p.stderr, rb"[\x00-\x08\x0b-\x1f\x7f]", p.stderr)
        self.assertIn(b"evil\\e]0;owned\\x07\\e[2J.jsonl", p.stderr)


class Diagnose(CliCase):
    def diag(self, out, *extra, rc=0, **kw):
        return self.expect([DIAG, os.path.join(self.root, "merged"), "-o", out, "--llm", "off"] + list(extra), rc, **kw)

    def merged_copy_with_trace(self, trace_bytes):
        """A merge folder whose trees are the fixture's and whose trace.json is `trace_bytes`."""
        merged = os.path.join(self.dir, "merged")
        os.makedirs(merged)
        shutil.copy(os.path.join(self.root, "merged", "trees.jsonl"), merged)
        with open(os.path.join(merged, "trace.json"), "wb") as f:
            f.write(trace_bytes)
        return merged

    def test_a_bad_trace_beside_the_trees_costs_only_its_copy(self):
        with open(os.path.join(self.root, "merged", "trace.json"), "rb") as f:
            whole = f.read()
        cut = self.merged_copy_with_trace(whole[: len(whole) // 2])  # an interrupted copy
        out = os.path.join(self.dir, "out")
        p = self.expect([DIAG, cut, "-o", out, "--llm", "off", "-q"], 0,
                        "warning: diagnosis.trace.json not written", "cut short")
        self.assertEqual(["diagnosis.jsonl", "report.html", "requests.jsonl", "stats.json"], outputs(out))
        with open(os.path.join(out, "stats.json")) as f:
            self.assertIn("cut short", json.load(f)["trace"]["error"])
        self.assertNotIn(b"Wrote", p.stdout)
        # Named with --trace, the same file is an input error: exit 1, nothing written.
        out2 = os.path.join(self.dir, "out2")
        self.expect([DIAG, cut, "-o", out2, "--llm", "off", "-q", "--trace", os.path.join(cut, "trace.json")], 1,
                    "cut short")
        self.assertFalse(os.path.exists(os.path.join(out2, "diagnosis.jsonl")))

    def test_trace_flag_checks_its_file(self):
        out = os.path.join(self.dir, "out")
        other = os.path.join(self.dir, "other.json")
        with open(other, "w") as f:
            f.write('{"traceEvents":[' + "{}," * 5000 + "{}]}")  # one long line, not truffld's
        self.expect([DIAG, os.path.join(self.root, "merged"), "-o", out, "--llm", "off", "--trace", other], 1,
                    "not a trace.json written by truffld-merge")
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        self.diag(out, "--trace", fifo, rc=1)
        self.diag(out, "--trace", os.path.join(self.dir, "absent.json"), rc=1)
        # A compressed merge trace is read like the plain one.
        gz = os.path.join(self.dir, "trace.json.gz")
        with open(os.path.join(self.root, "merged", "trace.json"), "rb") as f, gzip.open(gz, "wb") as g:
            g.write(f.read())
        self.diag(out, "-q", "--trace", gz)
        with open(os.path.join(out, "stats.json")) as f:
            self.assertGreater(json.load(f)["trace"]["flows"], 0)

    def test_a_trace_from_another_run_is_flagged(self):
        # Another merge's trace: same layout, none of this run's slices.
        other = os.path.join(self.dir, "o")
        for cmd in ([SYNTH, "--preset", "small", "--seed", "11", "--out", os.path.join(other, "dump"), "-q"],
                    [MERGE, os.path.join(other, "dump"), "-o", os.path.join(other, "merged"), "-q"]):
            self.assertEqual(0, run(cmd).returncode)
        p = self.diag(os.path.join(self.dir, "out"), "-q", "--trace", os.path.join(other, "merged", "trace.json"))
        self.assertIn(b"found its operator slice", p.stderr)

    def test_blame_outside_operators_is_not_a_trace_mismatch(self):
        # Every abnormal step blames the time between steps, which has no operator slice to link:
        # that is not a trace from another merge, and no warning says so.
        d = os.path.join(self.dir, "gaps")
        for cmd in ([SYNTH, "--preset", "small", "--steps", "60", "--seed", "3", "--faults", "sched_delay",
                     "--intensities", "strong", "--abnormal-fraction", "0.1", "--out", os.path.join(d, "dump"), "-q"],
                    [MERGE, os.path.join(d, "dump"), "-o", os.path.join(d, "merged"), "-q"]):
            self.assertEqual(0, run(cmd).returncode)
        out = os.path.join(d, "out")
        p = run([DIAG, os.path.join(d, "merged"), "-o", out, "--llm", "off", "-q"])
        self.assertEqual(0, p.returncode, p.stderr)
        with open(os.path.join(out, "stats.json")) as f:
            self.assertGreater(json.load(f)["trace"]["markers_outside"], 0)
        self.assertNotIn(b"found its operator slice", p.stderr)

    def test_input_problems_exit_1(self):
        out = os.path.join(self.dir, "out")
        self.expect([DIAG, os.path.join(self.dir, "typo"), "-o", out], 1, "typo")
        self.assertFalse(os.path.exists(out), "an output directory was made for nothing")
        self.diag(out, "--labels", os.path.join(self.dir, "nolabels.jsonl"), rc=1)
        self.diag(out, "--reference", os.path.join(self.dir, "nohealthy"), rc=1)

    def test_uncreatable_output_exits_3(self):
        blocker = os.path.join(self.dir, "file")
        open(blocker, "w").close()
        self.diag(os.path.join(blocker, "out"), rc=3)

    def test_quiet_prints_nothing(self):
        p = self.diag(os.path.join(self.dir, "o"), "-q", "--labels", os.path.join(self.root, "dump", "labels.jsonl"))
        self.assertEqual(b"", p.stdout)
        self.assertEqual(b"", p.stderr)

    def test_planted_symlinks_are_replaced_not_followed(self):
        out = os.path.join(self.dir, "out")
        names = ["diagnosis.jsonl", "report.html", "stats.json", "metrics.json", "features.csv"]
        target = self.plant_links(out, names)
        self.diag(out, "-q", "--labels", os.path.join(self.root, "dump", "labels.jsonl"),
                  "--export-features", os.path.join(out, "features.csv"))
        self.assert_safe_outputs(out, names, target)
        self.assert_no_temporaries(out)

    def test_exported_features_follow_the_name_asked_for(self):
        # The file is written under a temporary name first: CSV must still mean CSV.
        out = os.path.join(self.dir, "out")
        self.diag(out, "-q", "--export-features", os.path.join(out, "f.csv"), "--export-tests", os.path.join(out, "t.csv"))
        with open(os.path.join(out, "f.csv")) as f:
            self.assertTrue(f.readline().startswith("rank,step_index,view,family,"))
        with open(os.path.join(out, "t.csv")) as f:
            self.assertTrue(f.readline().startswith("rank,step_index,view,family,level,metric,"))
        self.diag(out, "-q", "--export-features", os.path.join(out, "f.jsonl"))
        with open(os.path.join(out, "f.jsonl")) as f:
            self.assertEqual("{", f.read(1))

    def test_outputs_this_run_does_not_write_are_removed(self):
        out = os.path.join(self.dir, "out")
        self.diag(out, "-q", "--labels", os.path.join(self.root, "dump", "labels.jsonl"))
        self.assertEqual(["diagnosis.jsonl", "diagnosis.trace.json", "metrics.json", "report.html", "requests.jsonl",
                          "stats.json"], outputs(out))
        self.diag(out, "-q", "--no-html")
        self.assertEqual(["diagnosis.jsonl", "diagnosis.trace.json", "requests.jsonl", "stats.json"], outputs(out))
        self.diag(out, "-q", "--no-html", "--no-trace")
        self.assertEqual(["diagnosis.jsonl", "requests.jsonl", "stats.json"], outputs(out))

    def test_full_disk_exits_3_and_keeps_the_earlier_outputs(self):
        out = os.path.join(self.dir, "out")
        self.diag(out, "-q")
        before = contents(out)
        self.diag(out, "-q", rc=3, limit_file_bytes=16 << 10)
        self.assertEqual(before, contents(out))
        self.assert_no_temporaries(out)

    def test_stats_json_on_a_full_tmpfs_exits_3(self):
        """A real ENOSPC on stats.json, the last output written: needs root to mount a tmpfs."""
        probe = os.path.join(self.dir, "probe")
        self.diag(probe, "-q", "--no-html", "--no-trace")
        sizes = {n: os.path.getsize(os.path.join(probe, n)) for n in ("diagnosis.jsonl", "stats.json")}
        pages = lambda n: (n + 4095) // 4096  # noqa: E731
        mnt = os.path.join(self.dir, "tmpfs")
        os.makedirs(mnt)
        size_kib = 4 * (pages(sizes["diagnosis.jsonl"]) + pages(sizes["stats.json"]) - 1)
        if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk" % size_kib, "tmpfs", mnt],
                                               capture_output=True).returncode != 0:
            self.skipTest("cannot mount a small tmpfs here (not root); the RLIMIT_FSIZE test covers writes")
        try:
            p = self.diag(os.path.join(mnt, "out"), "-q", "--no-html", "--no-trace", rc=3)
            self.assertIn(b"stats.json", p.stderr)
            self.assertEqual([], outputs(os.path.join(mnt, "out")))
        finally:
            subprocess.run(["umount", mnt], check=True)

    def test_table_escapes_truncates_and_counts_units(self):
        hostile = os.path.join(self.dir, "hostile")
        os.makedirs(hostile)
        with open(os.path.join(self.root, "merged", "trees.jsonl")) as f, \
                open(os.path.join(hostile, "trees.jsonl"), "w") as g:
            for line in f:
                g.write(line.replace("ncclAllReduce", "nccl\\u001b[2J\\u0007AllReduce" + "x" * 900)
                            .replace("aten::mm", "aten::mm\\u001b]0;owned\\u0007\\n\\r"))
        # No impact floor: the demo's mild collective faults cost under 1% of a step, and the
        # hostile collective name must reach the table.
        p = self.expect([DIAG, hostile, "-o", os.path.join(self.dir, "o"), "--llm", "off",
                         "--min-impact-share", "0"], 0)
        out = p.stdout
        self.assertNotRegex(out, rb"[\x00-\x09\x0b-\x1f\x7f]", "raw control bytes on stdout")
        self.assertIn(b"nccl\\e[2J\\x07AllReduce", out)
        lines = out.split(b"\n")
        self.assertLessEqual(max(len(line.decode()) for line in lines), 200)
        self.assertRegex(out.decode(), r"\n\d+ of \d+ \(rank, step, view\) units abnormal")
        self.assertIn("\u2026", out.decode())  # long names cut with an ellipsis

    def test_llm_url_credentials_are_redacted_and_a_dead_endpoint_trips_the_breaker(self):
        out = os.path.join(self.dir, "out")
        url = "http://alice:pw-s3cret@127.0.0.1:%d/v1?api-version=1&key=qk-s3cret" % free_port()
        env = dict(os.environ, TRUFFLD_LLM_MAX_RETRIES="3", TRUFFLD_LLM_CONCURRENCY="1")
        p = self.expect([DIAG, os.path.join(self.root, "merged"), "-o", out, "--llm", "on", "--llm-url", url],
                        0, env=env)
        self.assertIn(b"LLM endpoint given up", p.stderr)
        for name in ("stats.json", "report.html", "diagnosis.jsonl"):
            with open(os.path.join(out, name), "rb") as f:
                body = f.read()
            for secret in (b"pw-s3cret", b"qk-s3cret", b"YWxpY2U6cHctczNjcmV0"):
                self.assertNotIn(secret, body, name)
        self.assertNotIn(b"s3cret", p.stdout + p.stderr)
        with open(os.path.join(out, "stats.json")) as f:
            s2 = json.load(f)["stage2"]
        self.assertIn("key=[redacted]", s2["config"])
        self.assertIn("api-version=1", s2["config"])
        self.assertTrue(s2["circuit_breaker"]["tripped"])
        self.assertEqual(3, s2["requests"])  # not every step's retry schedule
        self.assertGreater(s2["circuit_breaker"]["steps_decided_offline"], 0)


class Synth(CliCase):
    def test_uncreatable_output_exits_3(self):
        blocker = os.path.join(self.dir, "file")
        open(blocker, "w").close()
        self.expect([SYNTH, "--preset", "demo", "--out", os.path.join(blocker, "out")], 3)
        self.expect([SYNTH, "--preset", "demo", "--out", self.dir + "/o", "-q"], 3, limit_file_bytes=64 << 10)

    def test_quiet_prints_nothing(self):
        p = self.expect([SYNTH, "--preset", "demo", "--out", os.path.join(self.dir, "o"), "-q"], 0)
        self.assertEqual(b"", p.stdout + p.stderr)


if __name__ == "__main__":
    truffld_unittest.main()
