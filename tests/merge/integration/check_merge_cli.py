#!/usr/bin/python3
"""End-to-end checks of the truffld-merge binary (run by ctest; /usr/bin/python3 only).

  check_merge_cli.py golden   MERGE SRC          committed dump -> committed expected outputs
  check_merge_cli.py realdata MERGE SRC DATA     every real trace: schema, nesting, accounting
  check_merge_cli.py badinput MERGE SRC          hostile inputs: counted, located, never a crash
  check_merge_cli.py streams  MERGE SRC          stdin, a pipe and a FIFO: read once, nothing lost
  check_merge_cli.py deep     MERGE SRC          a step 52,000 ranges deep: written whole

Set TRUFFLD_UPDATE_GOLDEN=1 to rewrite the golden expectations after an intended change.
"""
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading

try:
    import jsonschema
except ImportError:  # a missing test dependency fails the test, never turns validation off
    sys.exit("check_merge_cli: python3-jsonschema is missing (a bootstrap package: tools/bootstrap.sh)")

DEVICE = ("kernel", "memcpy", "memset", "sync")


def run(merge, args, cwd=None, check=True):
    p = subprocess.run([merge] + args, cwd=cwd, capture_output=True, text=True, errors="replace")
    if check and p.returncode != 0:
        sys.exit(f"truffld-merge {' '.join(args)} failed ({p.returncode}):\n{p.stderr}")
    return p


def load_trees(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def validator(src):
    with open(os.path.join(src, "schemas", "trees.schema.json")) as f:
        return jsonschema.Draft202012Validator(json.load(f))


def check_summary(src, summary, where):
    with open(os.path.join(src, "schemas", "summary.schema.json")) as f:
        errs = list(jsonschema.Draft202012Validator(json.load(f)).iter_errors(summary))
    if errs:
        sys.exit(f"{where}: summary.json: {errs[0].message[:300]}")


def check_trees(trees, val, where, max_validate=400):
    """Schema (first trees), host nesting, device after launch. Returns unique device nodes."""
    device = set()
    problems = []

    def walk(node, parent):
        layer = node["layer"]
        if parent is not None:
            if layer in DEVICE:
                if node["start"] < parent["start"]:
                    problems.append(f"{node['name'][:60]} starts before its launch call")
                device.add((layer, node.get("correlation_id"), node["start"], node["end"], node.get("stream")))
            elif not (parent["start"] <= node["start"] <= node["end"] <= parent["end"]):
                problems.append(f"{node['name'][:60]} [{node['start']},{node['end']}] outside parent "
                                f"{parent['name'][:60]} [{parent['start']},{parent['end']}]")
        for c in node.get("children", []):
            walk(c, node)

    for i, t in enumerate(trees):
        if val is not None and i < max_validate:
            errs = list(val.iter_errors(t))
            if errs:
                problems.append(f"tree {i}: schema: {errs[0].message[:200]}")
        walk(t["root"], None)
    if problems:
        sys.exit(f"{where}: {len(problems)} problem(s), first: " + "; ".join(problems[:3]))
    return device


def expand_groups(trees):
    """Grouped trees.jsonl lines -> the per-request lines they stand for."""
    out = []
    for t in trees:
        for q in t.get("request_group", [t["request"]]):
            u = dict(t)
            u.pop("request_group", None)
            u["request"] = q
            out.append(u)
    return out


def check_grouped(per_request, grouped, where):
    """The grouped layout must expand to exactly the per-request layout, and be smaller."""
    if len(grouped) > len(per_request):
        sys.exit(f"{where}: grouped layout has more lines ({len(grouped)}) than per-request ({len(per_request)})")
    for t in grouped:
        g = t.get("request_group")
        if g is not None and (len(g) < 2 or g[0] != t["request"]):
            sys.exit(f"{where}: bad request_group {g!r} for request {t['request']!r}")
    def key(t):
        return (t["rank"], t["process_id"], t["step_index"], t["view"], t["request"])
    got = sorted(expand_groups(grouped), key=key)
    want = sorted(per_request, key=key)
    if got != want:
        sys.exit(f"{where}: grouped trees do not expand to the per-request trees")


def golden(merge, src):
    gdir = os.path.join(src, "tests", "merge", "golden")
    with tempfile.TemporaryDirectory() as out:
        p = run(merge, ["rank0.jsonl", "rank1.jsonl", "-o", out, "--per-request-trees"], cwd=gdir)
        trees = load_trees(os.path.join(out, "trees.jsonl"))
        grouped_dir = os.path.join(out, "grouped")
        run(merge, ["rank0.jsonl", "rank1.jsonl", "-o", grouped_dir, "--no-trace-json"], cwd=gdir)
        check_grouped(trees, load_trees(os.path.join(grouped_dir, "trees.jsonl")), "golden")
        # --keep-page-cache and --no-direct-io change how the files reach the disk (the default
        # is direct I/O), never what they hold.
        for flag in ("--keep-page-cache", "--no-direct-io"):
            kept_dir = os.path.join(out, "kept" + flag)
            run(merge, ["rank0.jsonl", "rank1.jsonl", "-o", kept_dir, "--per-request-trees", flag], cwd=gdir)
            for name in ("trees.jsonl", "trace.json"):
                with open(os.path.join(out, name), "rb") as a, open(os.path.join(kept_dir, name), "rb") as b:
                    if a.read() != b.read():
                        sys.exit(f"golden: {name} differs with {flag}")
        check_trees(trees, validator(src), "golden")
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
        check_summary(src, summary, "golden")
        with open(os.path.join(out, "trace.json")) as f:
            json.load(f)
        got = {"trees": trees, "total": summary["total"],
               "offsets": [(f["path"], f["clock_offset_ns"], f["clock_offset_method"]) for f in summary["files"]]}
        expected_path = os.path.join(gdir, "expected.json")
        if os.environ.get("TRUFFLD_UPDATE_GOLDEN"):
            with open(expected_path, "w") as f:
                json.dump(got, f, indent=1, sort_keys=True)
                f.write("\n")
            print("golden expectations rewritten")
            return
        with open(expected_path) as f:
            want = json.load(f)
        got = json.loads(json.dumps(got))  # tuples -> lists
        # Counters added later must not break the golden test: compare the expected keys.
        got["total"] = {k: got["total"].get(k) for k in want["total"]}
        for key in ("total", "offsets"):
            if got[key] != want[key]:
                sys.exit(f"golden {key} differs:\n got  {got[key]}\n want {want[key]}")
        if len(got["trees"]) != len(want["trees"]):
            sys.exit(f"golden: {len(got['trees'])} trees, expected {len(want['trees'])}")
        for i, (g, w) in enumerate(zip(got["trees"], want["trees"])):
            if g != w:
                sys.exit(f"golden tree {i} (rank {w['rank']} step {w['step_index']} request {w['request']} "
                         f"{w['view']}) differs:\n got  {json.dumps(g)[:600]}\n want {json.dumps(w)[:600]}")
        print(p.stdout, end="")
        print(f"golden: {len(trees)} trees match")


# Device ops the data README says are linked by correlation (file -> linked count).
README_LINKED = {
    "vllm_gpt-oss_b200_tp8_rank0.json.gz": 929, "hf_qwen1.5-0.5b_h100.json.gz": 1198,
    "vllm_qwen3-8b_decode_graph_capture_mi300x.json.gz": 10,
    "vllm_qwen3-8b_decode_graph_replay_mi300x.json.gz": 434,
    "sglang_qwen3-8b_prefilldecode_mi300x.json.gz": 534, "hta_ddp_2rank_nccl_a100.json.gz": 3774,
    "hta_df_index_resolver.json.gz": 22290, "hta_trace_diff_control_a100.json.gz": 9450,
    "hta_sampled_rank-0.json.gz": 1204, "hta_sampled_rank-1.json.gz": 1154,
    "deepseek-v3_train_dualpipe_rank0.json.gz": 983,
}


OPERATOR_LAYERS = ("frontend_op", "backend_op", "comm", "other")


def check_operator_names(trace_path, trees, where):
    """trace.json is valid JSON and names its operator slices by family: the distinct names of
    operator slices are exactly the families of the operator nodes in trees.jsonl."""
    with open(trace_path, encoding="utf-8") as f:
        t = json.load(f)
    names = {e["name"] for e in t["traceEvents"] if e["ph"] == "X" and e["cat"] in OPERATOR_LAYERS}
    families = set()
    for tree in trees:
        stack = [tree["root"]]
        while stack:
            n = stack.pop()
            if n["layer"] in OPERATOR_LAYERS:
                families.add(n["family"])
            stack += n.get("children", [])
    if names != families:
        sys.exit(f"{where}: {len(names)} distinct operator slice names for {len(families)} families: "
                 f"{sorted(names ^ families)[:5]}")


def realdata(merge, src, data):
    if not os.path.isdir(data):
        print(f"SKIP: real traces folder {data} is absent")
        sys.exit(77)
    val = validator(src)
    files = []
    for sub in ("kineto", "nsys"):
        d = os.path.join(data, sub)
        if os.path.isdir(d):
            files += [os.path.join(d, n) for n in sorted(os.listdir(d))]
    if not files:
        print(f"SKIP: no traces under {data}")
        sys.exit(77)
    for path in files:
        name = os.path.basename(path)
        with tempfile.TemporaryDirectory() as out:
            run(merge, [path, "-o", out, "-q"])
            trees = load_trees(os.path.join(out, "trees.jsonl"))
            device = check_trees(trees, val, name, max_validate=20)
            with open(os.path.join(out, "summary.json")) as f:
                total = json.load(f)["total"]
            check_operator_names(os.path.join(out, "trace.json"), trees, name)
            kernels_in_trees = sum(1 for d in device if d[0] == "kernel")
            ops_in_trees = sum(1 for d in device if d[0] != "sync")
            if kernels_in_trees + total["kernels_unattributed"] != total["kernels_read"]:
                sys.exit(f"{name}: kernels in trees {kernels_in_trees} + unattributed "
                         f"{total['kernels_unattributed']} != read {total['kernels_read']}")
            if ops_in_trees != total["device_ops_linked_unique"]:
                sys.exit(f"{name}: {ops_in_trees} device ops in trees, summary says "
                         f"{total['device_ops_linked_unique']} linked")
            reasons = total["unattributed_reasons"]
            if set(reasons) - {"no_launch_api"}:
                sys.exit(f"{name}: device ops with a launching call left unlinked: {reasons}")
            want = README_LINKED.get(name)
            if want is not None and total["device_ops_linked_unique"] != want:
                sys.exit(f"{name}: linked {total['device_ops_linked_unique']}, the data README says {want}")
            print(f"{name}: {len(trees)} trees, {total['device_ops_read']} device ops, "
                  f"{total['device_ops_linked_unique']} linked, steps {total['steps']} "
                  f"({total['implicit_steps']} implicit)")


def badinput(merge, src):
    meta = ('{"type":"META","schema":"truffld.events/1","host":"h","process_id":1,"rank":0,'
            '"clock":"realtime","clock_sync":{"realtime_ns":1,"monotonic_ns":1}}\n')
    step_open = '{"type":"NVTX_PUSH","name":"step_execute_model[request_ids:7]","timestamp":10,"process_id":1,"thread_id":1}\n'
    step_close = '{"type":"NVTX_POP","timestamp":1000,"process_id":1,"thread_id":1}\n'
    api = '{"type":"RUNTIME","name":"cudaLaunchKernel","cbid":211,"start":%d,"end":%d,"correlation_id":%d,"process_id":1,"thread_id":1}\n'
    kern = '{"type":"KERNEL","name":"k","gpu_start":%d,"gpu_end":%d,"correlation_id":%d,"device":0,"stream":1}\n'
    cases = {
        "malformed.jsonl": (meta + step_open + '{"type":"NVTX_PUSH",,}\n' + step_close).encode(),
        "truncated.jsonl": (meta + step_open + step_close + '{"type":"KERNEL","na').encode(),
        "unknown.jsonl": (meta + '{"type":"FROBNICATE","x":1}\n' + step_open + step_close).encode(),
        "nometa.jsonl": (step_open + step_close).encode(),
        "dupcorr.jsonl": (meta + step_open + api % (20, 30, 5) + api % (40, 50, 5) + kern % (60, 70, 5) + step_close).encode(),
        "nolaunch.jsonl": (meta + step_open + kern % (60, 70, 77) + step_close).encode(),
        "negative.jsonl": (meta + step_open + api % (50, 20, 6) + step_close).encode(),
        "bigname.jsonl": (meta + step_open + '{"type":"NVTX_PUSH","name":"' + "n" * (1 << 20) +
                          '","timestamp":20,"process_id":1,"thread_id":1}\n' +
                          '{"type":"NVTX_POP","timestamp":30,"process_id":1,"thread_id":1}\n' + step_close).encode(),
        "utf8.jsonl": meta.encode() + step_open.encode() +
                      b'{"type":"NVTX_PUSH","name":"bad \xff\xfe name","timestamp":20,"process_id":1,"thread_id":1}\n' +
                      b'{"type":"NVTX_POP","timestamp":30,"process_id":1,"thread_id":1}\n' + step_close.encode(),
        "empty.jsonl": b"",
    }
    with tempfile.TemporaryDirectory() as tmp:
        ind = os.path.join(tmp, "in")
        os.makedirs(ind)
        for name, body in cases.items():
            with open(os.path.join(ind, name), "wb") as f:
                f.write(body)
        os.symlink(os.path.join(tmp, "nowhere"), os.path.join(ind, "unreadable.jsonl"))  # dangling
        inputs = [os.path.join(ind, n) for n in sorted(cases)] + [os.path.join(ind, "unreadable.jsonl")]
        out = os.path.join(tmp, "out")
        p = run(merge, inputs + ["-o", out])
        trees = load_trees(os.path.join(out, "trees.jsonl"))
        check_trees(trees, validator(src), "badinput")
        with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
            s = json.load(f)
        check_summary(src, s, "badinput")
        with open(os.path.join(out, "trace.json"), encoding="utf-8") as f:
            json.load(f)
        by = {os.path.basename(f["path"]): f for f in s["files"]}
        expect = {"malformed.jsonl": "malformed_json", "truncated.jsonl": "truncated_last_line",
                  "unknown.jsonl": "unknown_type", "nometa.jsonl": "missing_meta",
                  "dupcorr.jsonl": "duplicate_correlation", "nolaunch.jsonl": "device_no_launch_api",
                  "negative.jsonl": "negative_duration", "utf8.jsonl": "invalid_utf8",
                  "empty.jsonl": "empty_file"}
        for name, key in expect.items():
            if by[name]["ingest"].get(key, 0) < 1:
                sys.exit(f"{name}: '{key}' not counted: {by[name]['ingest']}")
        if not any(os.path.basename(f["path"]) == "unreadable.jsonl" for f in s["failed_inputs"]):
            sys.exit(f"unreadable input not reported: {s['failed_inputs']}")
        if "malformed.jsonl:3" not in p.stderr:
            sys.exit("stderr lacks file:line for the malformed record:\n" + p.stderr)
        steps_ok = sum(1 for t in trees if t["view"] == "vertical")
        if steps_ok < 8:
            sys.exit(f"only {steps_ok} vertical trees: good records were not merged")
        strict = run(merge, [os.path.join(ind, "malformed.jsonl"), "-o", os.path.join(tmp, "strict"), "--strict"], check=False)
        if strict.returncode == 0 or "malformed.jsonl:3" not in strict.stderr:
            sys.exit(f"--strict did not fail with a location ({strict.returncode}): {strict.stderr}")
        bad_rules(merge, tmp, os.path.join(ind, "nometa.jsonl"))
        print(f"badinput: {len(cases) + 1} hostile inputs handled, {len(trees)} trees still written")


# --rules files whose members have the wrong JSON type: each is a usage error (exit 2) naming the
# file and the member, never an abort (nlohmann's value() threw on them: exit 134).
def bad_rules(merge, tmp, dump):
    cases = {
        "icase.json": ({"rules": [{"layer": "comm", "name_regex": "^x", "ignore_case": 1}]}, "ignore_case"),
        "replace.json": ({"replace_defaults": "yes", "rules": []}, "replace_defaults"),
        "regex.json": ({"rules": [{"layer": "comm", "name_regex": 5}]}, "name_regex"),
        "domain.json": ({"rules": [{"layer": "comm", "domain": ["NCCL"]}]}, "domain"),
        "layer.json": ({"rules": [{"layer": 3}]}, "layer"),
        "rules.json": ({"rules": {"layer": "comm"}}, "rules"),
        "request.json": ({"request_regex": 7}, "request_regex"),
        "notobject.json": ([1, 2], "not a JSON object"),
    }
    for name, (doc, member) in cases.items():
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        p = run(merge, [dump, "-o", os.path.join(tmp, "rules-out"), "--rules", path], check=False)
        if p.returncode != 2 or name not in p.stderr or member not in p.stderr:
            sys.exit(f"--rules {name}: expected exit 2 naming the file and '{member}', got {p.returncode}: {p.stderr}")


def small_dump():
    meta = ('{"type":"META","schema":"truffld.events/1","host":"h","process_id":1,"rank":0,'
            '"clock":"realtime","clock_sync":{"realtime_ns":1,"monotonic_ns":1}}\n')
    body = meta + '{"type":"NVTX_PUSH","name":"step_execute_model[request_ids:1]","timestamp":10,"process_id":1,"thread_id":1}\n'
    for i in range(20):
        body += ('{"type":"RUNTIME","name":"cudaLaunchKernel","start":%d,"end":%d,"correlation_id":%d,'
                 '"process_id":1,"thread_id":1}\n' % (20 + 10 * i, 25 + 10 * i, i + 1))
        body += '{"type":"KERNEL","name":"k","gpu_start":%d,"gpu_end":%d,"correlation_id":%d,"device":0,"stream":1}\n' % (
            30 + 10 * i, 33 + 10 * i, i + 1)
    return body + '{"type":"NVTX_POP","timestamp":1000,"process_id":1,"thread_id":1}\n'


def events_read(out):
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        return sum(json.load(f)["total"]["events_read"].values())


# Inputs that can be read only once: standard input ("-"), a pipe (/dev/fd/N, what <(...) gives)
# and a FIFO whose writer finishes. Format sniffing must not eat their first bytes (a small
# dump then merged to 0 events) and a FIFO must not be opened twice (the second open waited
# forever for a writer that had gone).
def streams(merge, src):
    body = small_dump().encode()
    want = body.count(b"\n") - 1  # every record but META is an event
    with tempfile.TemporaryDirectory() as tmp:
        gz = gzip.compress(body)
        for name, data in [("stdin", body), ("stdin.gz", gz)]:
            out = os.path.join(tmp, name)
            p = subprocess.run([merge, "-", "-o", out, "-q"], input=data, capture_output=True, timeout=60)
            if p.returncode != 0 or events_read(out) != want:
                sys.exit(f"{name}: exit {p.returncode}, events {events_read(out) if p.returncode == 0 else '?'} "
                         f"of {want}: {p.stderr.decode()[-500:]}")
        r, w = os.pipe()
        writer = threading.Thread(target=lambda: (os.write(w, body), os.close(w)))
        writer.start()
        out = os.path.join(tmp, "pipe")
        p = subprocess.run([merge, f"/dev/fd/{r}", "-o", out, "-q"], pass_fds=[r], capture_output=True, timeout=60)
        os.close(r)
        writer.join()
        if p.returncode != 0 or events_read(out) != want:
            sys.exit(f"pipe: exit {p.returncode}: {p.stderr.decode()[-500:]}")
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)

        def feed():
            with open(fifo, "wb") as f:  # blocks until the merge opens it; then writes and closes
                f.write(body)
        writer = threading.Thread(target=feed)
        writer.start()
        out = os.path.join(tmp, "fifo-out")
        try:
            p = subprocess.run([merge, fifo, "-o", out, "-q"], capture_output=True, timeout=60)
        except subprocess.TimeoutExpired:
            sys.exit("FIFO: the merge hung after its writer finished")
        writer.join()
        if p.returncode != 0 or events_read(out) != want:
            sys.exit(f"fifo: exit {p.returncode}: {p.stderr.decode()[-500:]}")
    print(f"streams: stdin, gzip on stdin, a pipe and a FIFO each merged all {want} records")


# A step 52,000 ranges deep (an application leaking one push per step, or a deep Kineto
# trace): every pass and writer must be iterative; the recursive tree writer overflowed the
# stack and left a truncated trees.jsonl without a summary.
def deep(merge, src):
    depth = 52000
    lines = ['{"type":"NVTX_PUSH","name":"step_execute_model[request_ids:1]","timestamp":1,"process_id":1,"thread_id":1}']
    for i in range(depth):
        lines.append('{"type":"NVTX_PUSH","name":"r%d","timestamp":%d,"process_id":1,"thread_id":1}' % (i, 10 + i))
    for i in range(depth + 1):
        lines.append('{"type":"NVTX_POP","timestamp":%d,"process_id":1,"thread_id":1}' % (10 + depth + i))
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "deep.jsonl")
        with open(dump, "w") as f:
            f.write("\n".join(lines) + "\n")
        out = os.path.join(tmp, "out")
        # With a 1 MiB stack (a quarter of the usual 8 MiB's headroom under ASan, where frames
        # are larger): no code path may need stack in proportion to the depth.
        p = subprocess.run([merge, dump, "-o", out, "-q"], capture_output=True, timeout=300,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_STACK, (1 << 20, 1 << 20)))
        if p.returncode != 0:
            sys.exit(f"a {depth}-deep step: exit {p.returncode}: {p.stderr.decode(errors='replace')[-500:]}")
        with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
            s = json.load(f)
        with open(os.path.join(out, "trees.jsonl"), "rb") as f:
            text = f.read()
        # (json.loads would need a recursion limit above 52,000: count the nodes instead.)
        ranges = text.count(b'"name":"r')
        if ranges != depth or not text.endswith(b"}\n") or s["total"]["trees"] != 2:
            sys.exit(f"a {depth}-deep step: trees.jsonl holds {ranges} ranges, expected {depth}; "
                     f"trees {s['total']['trees']}")
        with open(os.path.join(out, "trace.json"), "rb") as f:
            if f.read().count(b'"ph":"X"') != depth + 1:
                sys.exit("trace.json lacks slices of the deep step")
    print(f"deep: a step {depth} ranges deep written whole")


def main():
    mode, merge, src = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    if mode == "golden":
        golden(merge, src)
    elif mode == "realdata":
        realdata(merge, src, sys.argv[4])
    elif mode == "badinput":
        badinput(merge, src)
    elif mode == "streams":
        streams(merge, src)
    elif mode == "deep":
        deep(merge, src)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
