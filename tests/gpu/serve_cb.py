#!/usr/bin/env python3
"""A real serving engine to trace: transformers' continuous-batching manager (its scheduler, its
paged KV cache, its request ids) serving a bounded stream of requests to a small randomly
initialised Qwen2 model on the GPU. Nothing is downloaded.

Usage: serve_cb.py [--requests 64] [--seed 1] [--fault-every 0] [--truth FILE] [--cuda-graphs]
                   [--result FILE] [--serve PORT]

Requests arrive one by one at random intervals (--arrival-ms mean), with prompts of
--min-prompt..--max-prompt tokens (log-uniform) and --min-new..--max-new new tokens, so the
engine's batches mix prefills and decodes and grow and shrink as in a real service. The last
stdout line is JSON: requests, generated tokens, engine steps, wall time of the serving part and
its throughput in generated tokens/s (what tests/gpu/real_engine.sh compares across capture
settings), and the engine configuration actually used.

Faults (--fault-every N > 0, needs the truffld hooks, whose step counter numbers the steps):
after step 10, one fault starts every N steps, in turn
  software    the MLP of the middle layer sleeps --delay-ms on its host thread (one step);
  memcpy      a --copy-mb MiB (16) pageable host buffer is copied to the GPU inside the step (one step);
  contention  a second process runs 8192^3 bf16 matrix products on the same GPU for 4 steps.
--truth FILE receives what was injected where: {"steps": engine steps, "faults": [{"step",
"class", "target"}], "uncertain": [steps at a contention edge]}, steps numbered from 0 in the
order the engine ran them (the order of truffld's step ranges on this process).

--serve PORT: instead, an OpenAI-compatible /v1/chat/completions endpoint on 127.0.0.1 backed by
the same engine (prompt bytes are the token ids; the reply is the generated ids as text), until
a request to /quit. It lets truffld-diagnose's Stage II client talk to a real engine.
"""
import argparse
import dataclasses
import json
import math
import os
import random
import subprocess
import sys
import threading
import time

import torch

CONTENTION_CHILD = r"""
import os, sys, threading, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
on = threading.Event()
def read():
    for line in sys.stdin:
        word = line.strip()
        if word == "quit":
            os._exit(0)
        on.set() if word == "on" else on.clear()
    os._exit(0)
threading.Thread(target=read, daemon=True).start()
torch.mm(a, b); torch.cuda.synchronize()
print("ready", flush=True)
while True:
    if on.is_set():
        for _ in range(2):
            torch.mm(a, b)
        torch.cuda.synchronize()
    else:
        time.sleep(0.0002)
"""


def build_model(args):
    from transformers import Qwen2Config, Qwen2ForCausalLM
    torch.manual_seed(args.seed)
    config = Qwen2Config(vocab_size=16384, hidden_size=1024, intermediate_size=2816,
                         num_hidden_layers=args.layers, num_attention_heads=16, num_key_value_heads=4,
                         max_position_embeddings=4096, attn_implementation=args.attn,
                         eos_token_id=None, pad_token_id=0)
    model = Qwen2ForCausalLM(config).to("cuda", dtype=torch.bfloat16).eval()
    # Paged attention on the implementation asked for: the manager would otherwise switch a model
    # that supports flash attention to it when a flash-attention package is installed.
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("paged|" + args.attn)
    return model


def engine_settings(args):
    """(GenerationConfig, ContinuousBatchingConfig or None, what was set): newer transformers take
    the engine's settings in ContinuousBatchingConfig, older ones read them from GenerationConfig;
    names the installed version does not know are left out and reported."""
    from transformers import GenerationConfig
    wanted = {"page_size": 32, "block_size": 32, "num_blocks": 8192, "max_batch_tokens": args.max_batch_tokens,
              "use_cuda_graph": bool(args.cuda_graphs), "use_async_batching": False,
              "allow_block_sharing": False, "scheduler_type": "fifo"}
    gen = GenerationConfig(max_new_tokens=args.max_new, do_sample=False, eos_token_id=-1, pad_token_id=0)
    try:
        from transformers.generation.configuration_utils import ContinuousBatchingConfig
        known = {f.name for f in dataclasses.fields(ContinuousBatchingConfig)}
        if "page_size" in known:  # 5.17 renamed block_size (the old name warns)
            wanted.pop("block_size")
        used = {k: v for k, v in wanted.items() if k in known}
        return gen, ContinuousBatchingConfig(**used), {"config": "ContinuousBatchingConfig", **used}
    except (ImportError, TypeError):
        for key, value in wanted.items():
            setattr(gen, key, value)
        return gen, None, {"config": "GenerationConfig", **wanted}


def start_manager(model, args):
    gen, cb, used = engine_settings(args)
    kwargs = {"generation_config": gen}
    if cb is not None:
        kwargs["continuous_batching_config"] = cb
    manager = model.init_continuous_batching(**kwargs)
    if args.cuda_graphs and hasattr(manager, "warmup"):
        manager.warmup()  # capture the graphs now, not inside the measured serving time
    manager.start()
    used["attn"] = getattr(model.config, "_attn_implementation", None)
    return manager, used


def stop(manager, hard):
    """Stops the engine; after a failure without finishing its queue (5.17's stop flushes by
    default, and its thread would keep the process alive)."""
    import inspect
    kwargs = {"block": True, "timeout": 30}
    if hard and "hard_stop" in inspect.signature(manager.stop).parameters:
        kwargs["hard_stop"] = True
    manager.stop(**kwargs)


def step_ordinal():
    """0-based number of the engine step running now, from the hooks' step counter."""
    try:
        import truffld_hooks
        return truffld_hooks.engines.counters["steps"] - 1
    except (ImportError, AttributeError, KeyError):
        return -1


class Faults:
    """Injects the faults of --fault-every from forward pre-hooks (which run inside the step
    range) and records where they went."""

    def __init__(self, model, args):
        self.every, self.delay = args.fault_every, args.delay_ms / 1e3
        self.faults, self.uncertain, self.done = [], set(), set()
        self.contention_until = -1
        self.staging = torch.empty(args.copy_mb << 18, dtype=torch.float32)  # pageable on purpose
        layers = model.model.layers
        self.mlp = layers[len(layers) // 2].mlp
        self.mlp_name = "model.layers.%d.mlp" % (len(layers) // 2)
        self.child = None
        if self.every > 0:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("TRUFFLD", "CUDA_INJECTION",
                                                                          "NVTX_INJECTION", "PYTHONPATH"))}
            self.child = subprocess.Popen([sys.executable, "-c", CONTENTION_CHILD], env=env, text=True,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            if self.child.stdout.readline().strip() != "ready":
                raise RuntimeError("the contention process did not start")
            model.model.embed_tokens.register_forward_pre_hook(self.at_step_start)
            self.mlp.register_forward_pre_hook(self.at_mlp)

    def kind(self, step):
        if self.every <= 0 or step < 10 or (step - 10) % self.every:
            return None
        return ("software", "memcpy", "contention")[((step - 10) // self.every) % 3]

    def at_step_start(self, module, inputs):
        step = step_ordinal()
        if step < 0 or step in self.done:
            return
        self.done.add(step)
        if step == self.contention_until:
            self.child.stdin.write("off\n"); self.child.stdin.flush()
            self.uncertain.update({step, step + 1})
        kind = self.kind(step)
        if kind == "memcpy":
            self.staging.to("cuda")
            self.faults.append({"step": step, "class": "memcpy", "target": "aten::copy_",
                                "bytes": self.staging.numel() * 4})
        elif kind == "contention":
            self.child.stdin.write("on\n"); self.child.stdin.flush()
            self.contention_until = step + 4
            self.uncertain.add(step)
            for s in range(step + 1, step + 4):
                self.faults.append({"step": s, "class": "contention", "target": "gpu"})
        elif kind == "software":
            self.faults.append({"step": step, "class": "software", "target": self.mlp_name,
                                "delay_ms": self.delay * 1e3})

    def at_mlp(self, module, inputs):
        if self.kind(step_ordinal()) == "software":
            time.sleep(self.delay)

    def close(self, steps):
        if self.child:
            self.child.stdin.write("quit\n"); self.child.stdin.flush()
            self.child.wait(timeout=30)
        faults = [f for f in self.faults if f["step"] < steps and f["step"] not in self.uncertain]
        return {"steps": steps, "faults": faults, "uncertain": sorted(s for s in self.uncertain if s < steps)}


def feed(manager, args, rng):
    """Adds --requests requests at random intervals; returns {request id: max_new_tokens}."""
    wanted = {}
    for i in range(args.requests):
        length = int(math.exp(rng.uniform(math.log(args.min_prompt), math.log(args.max_prompt))))
        new = rng.randint(args.min_new, args.max_new)
        rid = "req-%03d" % i
        manager.add_request([rng.randrange(1, 16384) for _ in range(length)], request_id=rid,
                            max_new_tokens=new)
        wanted[rid] = new
        time.sleep(rng.expovariate(1e3 / args.arrival_ms))
    return wanted


def serve_stream(manager, args):
    rng = random.Random(args.seed)
    t0 = time.perf_counter()
    wanted = {}
    feeder = threading.Thread(target=lambda: wanted.update(feed(manager, args, rng)))
    feeder.start()
    done, tokens, failed = set(), 0, []
    while len(done) < args.requests:
        result = manager.get_result(timeout=5)
        if result is None:
            if not manager.is_running():
                raise RuntimeError("the engine's generation thread stopped")
            if time.perf_counter() - t0 > args.timeout_s:
                raise RuntimeError("timed out with %d of %d requests done" % (len(done), args.requests))
            continue
        if not (result.is_finished() or getattr(result, "error", None)):
            continue  # a streamed partial result (failed ones are not "finished" before 5.17)
        done.add(result.request_id)
        tokens += len(result.generated_tokens)
        if getattr(result, "error", None):
            failed.append(result.request_id)
    wall = time.perf_counter() - t0
    feeder.join()
    return {"requests": len(done), "failed": failed, "generated_tokens": tokens, "wall_s": round(wall, 4),
            "tokens_per_s": round(tokens / wall, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--attn", default="sdpa")
    ap.add_argument("--min-prompt", type=int, default=16)
    ap.add_argument("--max-prompt", type=int, default=768)
    ap.add_argument("--min-new", type=int, default=8)
    ap.add_argument("--max-new", type=int, default=48)
    ap.add_argument("--arrival-ms", type=float, default=12.0)
    ap.add_argument("--max-batch-tokens", type=int, default=1024)
    ap.add_argument("--cuda-graphs", action="store_true", help="let the engine replay CUDA graphs")
    ap.add_argument("--fault-every", type=int, default=0)
    ap.add_argument("--delay-ms", type=float, default=2.0)
    ap.add_argument("--copy-mb", type=int, default=16, help="size of the memcpy fault's host buffer (MiB)")
    ap.add_argument("--truth")
    ap.add_argument("--result")
    ap.add_argument("--timeout-s", type=float, default=240)
    ap.add_argument("--serve", type=int, default=0)
    args = ap.parse_args()
    import transformers
    model = build_model(args)
    if args.serve:
        from serve_http import serve_openai
        return serve_openai(model, args, start_manager)
    faults = Faults(model, args)
    manager, used = start_manager(model, args)
    try:
        out = serve_stream(manager, args)
    except BaseException:
        stop(manager, hard=True)
        raise
    stop(manager, hard=False)
    torch.cuda.synchronize()
    steps = step_ordinal() + 1
    truth = faults.close(steps)
    try:
        import truffld_hooks
        hooks = {"patched": [p for p in truffld_hooks.stats()["patched"] if "continuous" in p.lower()],
                 "counters": dict(truffld_hooks.engines.counters)}
    except ImportError:
        hooks = None
    out.update({"steps": steps, "transformers": transformers.__version__, "torch": torch.__version__,
                "engine": used, "hooks": hooks, "faults": len(truth["faults"])})
    if args.truth:
        with open(args.truth, "w") as handle:
            json.dump(truth, handle)
    if args.result:
        with open(args.result, "w") as handle:
            json.dump(out, handle)
    print(json.dumps(out), flush=True)
    return 0 if not out["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
