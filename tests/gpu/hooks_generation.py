"""GPU check of the Python hooks (ctest label gpu; needs an NVIDIA GPU, CUDA driver, torch with
CUDA and transformers): batched greedy generation with a small randomly initialised Qwen2 model
(no weights downloaded) under the hooks and libcupti_injector.so, then truffld-merge, then checks
that GPU kernels are attributed to backend operators (aten::...), to frontend operators
(torch.nn.functional.* / nn.Module:*) and to steps whose names carry the request ids.

Usage (from a build tree; ctest passes the paths through the environment):
  TRUFFLD_INJECTOR=build/inject/libcupti_injector.so TRUFFLD_MERGE=build/merge/truffld-merge \\
    /usr/bin/python3 tests/gpu/hooks_generation.py [--keep DIR]
Exit codes: 0 pass, 1 fail (message names the failed check), 77 skipped (no GPU, no
transformers, or binaries not built).
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "hooks"))
import hookstest  # noqa: E402
from hookstest import fail, skip  # noqa: E402


# The workload, run in a child started with the hooks enabled by environment only.
WORKLOAD = r"""
import json, sys
import torch
import truffld_hooks
from transformers import Qwen2Config, Qwen2ForCausalLM

torch.manual_seed(0)
config = Qwen2Config(vocab_size=1024, hidden_size=256, intermediate_size=512,
                     num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                     max_position_embeddings=256, attn_implementation="eager")
model = Qwen2ForCausalLM(config).to("cuda", dtype=torch.float16).eval()

def generate(request_ids, new_tokens):
    batch = len(request_ids)
    tokens = torch.randint(0, config.vocab_size, (batch, 12), device="cuda")
    past = None
    with torch.no_grad():
        for step in range(new_tokens):
            with truffld_hooks.step_range(request_ids):
                out = model(input_ids=tokens if past is None else tokens[:, -1:],
                            past_key_values=past, use_cache=True)
                past = out.past_key_values
                nxt = out.logits[:, -1, :].argmax(dim=-1, keepdim=True)
                tokens = torch.cat([tokens, nxt], dim=1)
    torch.cuda.synchronize()

batches = [["req-0", "req_1", "req-2"], ["req-3", "req-4"]]
generate(batches[0], 4)
generate(batches[1], 3)
print(json.dumps({"batches": batches, "stats": truffld_hooks.stats()}))
"""


def walk(node, ancestors=()):
    yield node, ancestors
    for child in node.get("children", []):
        yield from walk(child, ancestors + (node,))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", help="keep dumps and merge output in this folder")
    args = parser.parse_args()
    injector = os.environ.get("TRUFFLD_INJECTOR", "")
    merge = os.environ.get("TRUFFLD_MERGE", "")
    for label, path in (("libcupti_injector.so", injector), ("truffld-merge", merge)):
        if not path or not os.path.exists(path):
            skip("%s is not built (%r)" % (label, path))
    probe = subprocess.run([hookstest.PYTHON, "-c", "import torch, transformers; "
                            "print(torch.cuda.is_available())"], capture_output=True, text=True)
    if probe.returncode != 0:
        skip("torch/transformers not importable: " + probe.stderr.strip()[-300:])
    if probe.stdout.strip() != "True":
        skip("no CUDA device visible to torch")

    work = args.keep or tempfile.mkdtemp(prefix="truffld-gpu-")
    dumps = os.path.join(work, "dumps")
    os.makedirs(dumps, exist_ok=True)
    env = hookstest.hooks_env(CUDA_INJECTION64_PATH=injector, NVTX_INJECTION64_PATH=injector,
                              TRUFFLD_OUTPUT_DIR=dumps)
    proc = subprocess.run([hookstest.PYTHON, "-c", WORKLOAD], env=env, capture_output=True,
                          text=True, timeout=540)
    if proc.returncode != 0:
        fail("workload rc=%d\n%s\n%s" % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    result = json.loads(proc.stdout.splitlines()[-1])
    print("hooks:", json.dumps({k: result["stats"][k] for k in ("nvtx_binding", "backend")}))
    files = sorted(glob.glob(os.path.join(dumps, "truffld-*.jsonl*")))
    if not files:
        fail("the injector wrote no dump into " + dumps)
    out = os.path.join(work, "merged")
    proc = subprocess.run([merge] + files + ["-o", out], capture_output=True, text=True,
                          timeout=300)
    if proc.returncode != 0:
        fail("truffld-merge rc=%d\n%s" % (proc.returncode, proc.stderr[-3000:]))
    with open(os.path.join(out, "trees.jsonl")) as handle:
        trees = [json.loads(line) for line in handle if line.strip()]
    vertical = [t for t in trees if t.get("view") == "vertical"]
    sets = {tuple(t["requests"]) for t in vertical}
    for batch in result["batches"]:
        if tuple(batch) not in sets:
            fail("no step tree with requests %r (have %r)" % (batch, sorted(sets)))
    kernels = backend_k = frontend_k = 0
    for tree in vertical:
        for node, ancestors in walk(tree["root"]):
            if node.get("layer") != "kernel":
                continue
            kernels += 1
            layers = {a.get("layer") for a in ancestors}
            backend_k += "backend_op" in layers
            frontend_k += "frontend_op" in layers
    print("trees=%d kernels=%d under backend_op=%d under frontend_op=%d"
          % (len(vertical), kernels, backend_k, frontend_k))
    if kernels == 0:
        fail("no kernel attributed to any step")
    if backend_k == 0:
        fail("no kernel under a backend operator (emit_nvtx not active on the model thread?)")
    if frontend_k == 0:
        fail("no kernel under a frontend operator")
    print("PASS (output in %s)" % work)


if __name__ == "__main__":
    main()
