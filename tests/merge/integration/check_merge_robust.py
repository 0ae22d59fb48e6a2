#!/usr/bin/python3
"""Robustness checks of the truffld-merge binary against hostile input (run by ctest).

  check_merge_robust.py regex  MERGE    user regexes that make a backtracking engine hang
  check_merge_robust.py stdin  MERGE    a dump on stdin that repeats one given in a folder
  check_merge_robust.py fifo   MERGE    a FIFO inside an input folder is listed as skipped
  check_merge_robust.py gzcut  MERGE    a .gz dump cut inside its last line: one malformed line
  check_merge_robust.py zstcut MERGE    the same for a .zst dump (the injector's TRUFFLD_COMPRESS=zstd)
  check_merge_robust.py lock   MERGE    a second run on a locked OUTDIR exits 3 naming the holder

No check is timed: a hang is caught by the ctest TIMEOUT of the test.
"""
import json
import os
import subprocess
import sys
import tempfile

META = ('{"type":"META","schema":"truffld.events/1","host":"h","process_id":1,"rank":0,'
        '"clock":"realtime","clock_sync":{"realtime_ns":1,"monotonic_ns":1}}\n')


def push(name, ts):
    return json.dumps({"type": "NVTX_PUSH", "name": name, "timestamp": ts, "process_id": 1, "thread_id": 1}) + "\n"


def pop(ts):
    return '{"type":"NVTX_POP","timestamp":%d,"process_id":1,"thread_id":1}\n' % ts


def run(merge, args, **kw):
    return subprocess.run([merge] + args, capture_output=True, text=True, errors="replace", **kw)


def summary(out):
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        return json.load(f)


# "(.*)*x" against a 100 KB name of 'a's, and "request_ids:((a*)*)$" against a step whose ids
# run on without a closing ']': a backtracking engine (std::regex) takes minutes or more on
# each; RE2 is linear. An invalid pattern is a usage error naming the flag or the rule.
def regex(merge):
    long_name = "a" * 100_000
    dump = META + push("step_execute_model[request_ids:" + "a" * 4000 + "b", 10) + push(long_name, 20) + pop(30) + pop(40)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "d.jsonl")
        with open(path, "w") as f:
            f.write(dump)
        rules = os.path.join(tmp, "rules.json")
        with open(rules, "w") as f:
            json.dump({"rules": [{"layer": "frontend_op", "name_regex": "(.*)*x"}]}, f)
        p = run(merge, [path, "-o", os.path.join(tmp, "o1"), "-q", "--rules", rules])
        if p.returncode != 0:
            sys.exit(f"--rules '(.*)*x': exit {p.returncode}: {p.stderr[-500:]}")
        p = run(merge, [path, "-o", os.path.join(tmp, "o2"), "-q", "--request-regex", "request_ids:((a*)*)$"])
        if p.returncode != 0:
            sys.exit(f"--request-regex '((a*)*)$': exit {p.returncode}: {p.stderr[-500:]}")
        p = run(merge, [path, "-o", os.path.join(tmp, "o3"), "-q", "--request-regex", "ids:(a"])
        if p.returncode != 2 or "--request-regex" not in p.stderr or "RE2" not in p.stderr:
            sys.exit(f"invalid --request-regex: expected exit 2 naming the flag, got {p.returncode}: {p.stderr}")
        with open(rules, "w") as f:
            json.dump({"rules": [{"layer": "comm", "name_regex": "^ok"}, {"layer": "comm", "name_regex": "(a)\\1"}]}, f)
        p = run(merge, [path, "-o", os.path.join(tmp, "o4"), "-q", "--rules", rules])
        if p.returncode != 2 or "rules[1]" not in p.stderr or "name_regex" not in p.stderr:
            sys.exit(f"a backreference in --rules: expected exit 2 naming rules[1], got {p.returncode}: {p.stderr}")
        h = run(merge, ["--help"])
        if "RE2" not in h.stdout:
            sys.exit("--help does not say which regex syntax applies")
    print("regex: hostile patterns ran to completion; invalid ones are usage errors naming the flag/rule")


def dump_with_steps(n):
    body = META
    for i in range(n):
        body += push("step_execute_model[request_ids:%d]" % i, 100 * i + 10) + pop(100 * i + 90)
    return body


# The same dump in a folder and on standard input: read once, the stdin copy listed as a
# duplicate (it was merged twice: every step of the rank counted two times).
def stdin(merge):
    body = dump_with_steps(6)
    with tempfile.TemporaryDirectory() as tmp:
        ind = os.path.join(tmp, "in")
        os.makedirs(ind)
        with open(os.path.join(ind, "r0.jsonl"), "w") as f:
            f.write(body)
        out = os.path.join(tmp, "out")
        p = subprocess.run([merge, ind, "-", "-o", out, "-q"], input=body.encode(), capture_output=True, timeout=50)
        if p.returncode != 0:
            sys.exit(f"stdin: exit {p.returncode}: {p.stderr.decode()[-500:]}")
        s = summary(out)
        dup = [x for x in s["skipped_inputs"] if x.get("kind") == "duplicate"]
        steps = s["total"]["steps"] if "steps" in s["total"] else None
        if len(dup) != 1 or dup[0]["path"] != "-" or len(s["files"]) != 1:
            sys.exit(f"stdin repeating a file: files {[f['path'] for f in s['files']]}, skipped {s['skipped_inputs']}")
        if b"same dump" not in p.stderr:
            sys.exit(f"stdin duplicate not reported on stderr: {p.stderr.decode()}")
    print(f"stdin: a dump on stdin repeating a file is merged once (steps {steps})")


# A FIFO named like a dump inside an input folder is not read (it would block) and is listed.
def fifo(merge):
    with tempfile.TemporaryDirectory() as tmp:
        ind = os.path.join(tmp, "in")
        os.makedirs(ind)
        with open(os.path.join(ind, "r0.jsonl"), "w") as f:
            f.write(dump_with_steps(2))
        os.mkfifo(os.path.join(ind, "r1.jsonl"))
        out = os.path.join(tmp, "out")
        p = run(merge, [ind, "-o", out, "-q"], timeout=50)
        if p.returncode != 0:
            sys.exit(f"fifo: exit {p.returncode}: {p.stderr[-500:]}")
        s = summary(out)
        skipped = [x for x in s["skipped_inputs"] if x["path"].endswith("r1.jsonl")]
        if not skipped or skipped[0].get("kind") != "not_a_regular_file" or s["skipped_by_kind"]["not_a_regular_file"] != 1:
            sys.exit(f"fifo: not listed as skipped: {s['skipped_inputs']} {s['skipped_by_kind']}")
        if "r1.jsonl" not in p.stderr or "FIFO" not in p.stderr:
            sys.exit(f"fifo: stderr does not name it: {p.stderr}")
    print("fifo: a FIFO in an input folder is listed as skipped")


# A run holding OUTDIR's lock (simulated by flock on OUTDIR/.truffld.lock from this process)
# makes a second run exit 3 naming the lock; with --wait-lock it waits and then writes. A
# symlink planted as the lock file is refused, not followed.
def lock(merge):
    import fcntl
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "d.jsonl")
        with open(dump, "w") as f:
            f.write(dump_with_steps(2))
        out = os.path.join(tmp, "out")
        os.makedirs(out)
        holder = os.open(os.path.join(out, ".truffld.lock"), os.O_RDWR | os.O_CREAT, 0o640)
        os.write(holder, b"test-holder, pid %d\n" % os.getpid())
        fcntl.flock(holder, fcntl.LOCK_EX)
        p = run(merge, [dump, "-o", out, "-q"], timeout=50)
        if p.returncode != 3 or ".truffld.lock" not in p.stderr or "test-holder" not in p.stderr:
            sys.exit(f"lock held: expected exit 3 naming the lock and holder, got {p.returncode}: {p.stderr}")
        if os.path.exists(os.path.join(out, "summary.json")):
            sys.exit("lock held: the second run wrote summary.json anyway")
        waiter = subprocess.Popen([merge, dump, "-o", out, "-q", "--wait-lock"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        try:
            waiter.wait(timeout=1)  # not a timing check: it must still be waiting while we hold it
            sys.exit(f"--wait-lock: exited {waiter.returncode} while the lock was held")
        except subprocess.TimeoutExpired:
            pass
        fcntl.flock(holder, fcntl.LOCK_UN)
        os.close(holder)
        if waiter.wait(timeout=50) != 0 or not os.path.exists(os.path.join(out, "summary.json")):
            sys.exit(f"--wait-lock: exit {waiter.returncode}: {waiter.stderr.read().decode()}")
        out2 = os.path.join(tmp, "out2")
        os.makedirs(out2)
        os.symlink(os.path.join(tmp, "victim"), os.path.join(out2, ".truffld.lock"))
        p = run(merge, [dump, "-o", out2, "-q"], timeout=50)
        if p.returncode != 3 or os.path.exists(os.path.join(tmp, "victim")):
            sys.exit(f"symlinked lock: expected exit 3 and nothing created, got {p.returncode}: {p.stderr}")
    print("lock: a held OUTDIR lock gives exit 3 naming it; --wait-lock waits; a symlink is refused")


# A compressed dump cut short inside a line (gzip, or zstd as the injector writes with
# TRUFFLD_COMPRESS=zstd, e.g. a process killed mid-write): the cut line and the stream's early end
# are one problem (malformed_lines 1; it was 2: truncated_last_line and read_warning), and every
# record decoded before the cut is kept.
def cut(merge, suffix, pack):
    body = dump_with_steps(20000).encode()
    packed = pack(body)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cut.jsonl" + suffix)
        with open(path, "wb") as f:
            f.write(packed[:len(packed) // 2])
        out = os.path.join(tmp, "out")
        p = run(merge, [path, "-o", out, "-q"], timeout=50)
        if p.returncode != 0:
            sys.exit(f"{suffix} cut: exit {p.returncode}: {p.stderr[-500:]}")
        s = summary(out)
        f = s["files"][0]
        ingest = {k: v for k, v in f["ingest"].items() if v}
        if f["counters"]["malformed_lines"] != 1 or ingest.get("truncated_last_line") != 1:
            sys.exit(f"{suffix} cut: one cut line counted as {f['counters']['malformed_lines']} malformed lines: {ingest}")
        steps = sum(r["steps"] for r in s["ranks"])
        if not 1000 <= steps < 20000:
            sys.exit(f"{suffix} cut: {steps} steps kept of the 20000 in the whole dump (about half were before the cut)")
    print(f"{suffix} cut: a dump cut mid-line counts one malformed line ({ingest}) and keeps {steps} of 20000 steps")


def gzcut(merge):
    import gzip
    cut(merge, ".gz", gzip.compress)


def zstcut(merge):
    def zstd(body):
        return subprocess.run(["zstd", "-q", "-c"], input=body, capture_output=True, check=True).stdout
    cut(merge, ".zst", zstd)


def main():
    mode, merge = sys.argv[1], os.path.abspath(sys.argv[2])
    {"regex": regex, "stdin": stdin, "fifo": fifo, "lock": lock, "gzcut": gzcut, "zstcut": zstcut}[mode](merge)


if __name__ == "__main__":
    main()
