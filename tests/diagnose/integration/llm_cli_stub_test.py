#!/usr/bin/python3
"""truffld-diagnose --llm-url end to end against the loopback policy stub, on a small merged
trace (truffld-synth --preset small | truffld-merge):
  * decisions come from the model (stage2.source = llm), every diagnosis.jsonl line is valid
    against schemas/diagnosis.schema.json, and every request carried the bearer key;
  * a rerun with the same --llm-cache is served from the cache: zero HTTP requests reach a fresh
    stub, stats.json says requests 0, decisions say source = cache, labels are unchanged;
  * the key given in TRUFFLD_LLM_API_KEY appears in no output file, cache entry, stdout or stderr.
Usage: llm_cli_stub_test.py --diag BIN --synth BIN --merge BIN --stub PY --schema JSON --work DIR"""
import argparse
import glob
import json
import os
import secrets
import shutil

from cli_test_util import Stub, assert_absent, fail, files_under, read_diagnoses, run


def main():
    ap = argparse.ArgumentParser()
    for a in ("diag", "synth", "merge", "stub", "schema", "work"):
        ap.add_argument("--" + a, required=True)
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    raw, merged = os.path.join(a.work, "raw"), os.path.join(a.work, "merged")
    run([a.synth, "--preset", "small", "--seed", "3", "--out", raw])
    dumps = sorted(glob.glob(os.path.join(raw, "truffld-*.jsonl*")))
    run([a.merge, *dumps, "-o", merged])

    key = "sk-truffld-test-" + secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "TRUFFLD_LLM_API_KEY")}
    env["TRUFFLD_LLM_API_KEY"] = key
    env["TRUFFLD_LLM_CONCURRENCY"] = "2"
    cache = os.path.join(a.work, "cache")
    outputs = []

    def diagnose(out, stats_name):
        with Stub(a.stub, os.path.join(a.work, stats_name)) as stub:
            stdout, stderr = run([a.diag, merged, "-o", out, "--llm", "on", "--llm-url", stub.url,
                                  "--llm-model", "stub-policy", "--llm-cache", cache,
                                  "--labels", os.path.join(raw, "labels.jsonl")], env=env)
        outputs.extend([(out + " stdout", stdout), (out + " stderr", stderr)])
        with open(os.path.join(out, "stats.json")) as f:
            stats = json.load(f)["stage2"]
        return stub.stats, stats, read_diagnoses(os.path.join(out, "diagnosis.jsonl"), a.schema)

    # First run: the model decides every step that has a Stage I candidate.
    out1 = os.path.join(a.work, "out1")
    stub1, s2_1, d1 = diagnose(out1, "stub1.json")
    sources1 = [d["stage2"]["source"] for d in d1]
    n_llm = sources1.count("llm")
    if n_llm == 0:
        fail("no decision came from the model: %s" % sorted(set(sources1)))
    if "offline-fallback" in sources1 or s2_1["fallbacks"] != 0:
        fail("fallbacks on a healthy stub: %s" % s2_1)
    if set(sources1) - {"llm", "offline"}:
        fail("unexpected sources in a cold run: %s" % sorted(set(sources1)))
    if stub1["requests"] != n_llm or s2_1["requests"] != n_llm:
        fail("requests: stub %d, stats.json %d, llm decisions %d" % (stub1["requests"], s2_1["requests"], n_llm))
    if stub1["authorized"] != stub1["requests"]:
        fail("not every request carried the bearer key: %s" % stub1)
    if not glob.glob(os.path.join(cache, "*.json")):
        fail("no cache entries written")

    # Rerun with the same cache and a fresh stub: nothing is sent.
    out2 = os.path.join(a.work, "out2")
    stub2, s2_2, d2 = diagnose(out2, "stub2.json")
    if stub2["requests"] != 0 or s2_2["requests"] != 0:
        fail("rerun sent requests: stub %d, stats.json %d" % (stub2["requests"], s2_2["requests"]))
    sources2 = [d["stage2"]["source"] for d in d2]
    if sources2.count("cache") != n_llm or "llm" in sources2 or s2_2["cache_hits"] != n_llm:
        fail("rerun not served from the cache: %s, cache_hits %d" % (sorted(set(sources2)), s2_2["cache_hits"]))
    strip = lambda d: (d["rank"], d["step_index"], d["view"], d["label"], sorted(d["stage2"]["faulty"]))
    if [strip(x) for x in d1] != [strip(x) for x in d2]:
        fail("cached decisions differ from the first run's")

    # The key: never in any output, cache entry, stdout or stderr.
    files = list(files_under(out1, out2, cache))
    checked = assert_absent(key.encode(), files, outputs)
    print("ok: %d steps, %d llm decisions, rerun 0 requests / %d cache hits, key absent from %d files "
          "and 4 streams" % (len(d1), n_llm, s2_2["cache_hits"], checked))


if __name__ == "__main__":
    main()
