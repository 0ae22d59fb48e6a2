"""Benchmark (ctest label bench): what each part of the always-on step boundary costs, in thread
CPU µs per step, in a tight loop and between the steps of a model (issue #41).

``truffld_hooks.step_range(ids, phase=, tokens=, ctx=)`` is what an engine step pays outside
detail windows. Its parts, each timed alone:

  name           naming.step_name_py: the step range's name from 4 ids and 3 tags in Python
  name (C)       the same name from the extension module's step_name
  enter/exit     windows.enter_step + exit_step with a ready name: the fused push + window
                 query and pop + query, with the bookkeeping around them (in C where the
                 extension module loaded: pystep_boundary.c)
  enter/exit (Python)  windows.py's own enter_step + exit_step, the extension module's calls
  enter/exit (ctypes)  the same with the shim called through ctypes (the extension unloaded)
  native calls   _truffld_pystep.step_push + step_pop alone (the extension module's two calls)
  ctypes calls   the shim's truffld_pynvtx_step_push + step_pop through ctypes alone
  query          the injector's truffld_detail_window through ctypes alone
  step_range     the whole ``with step_range(...)``: name, counters, enter and exit
  step_range (Python)  the same with the package's Python step_range class (_PyStepRange)

*Tight loop*: best of 7 repetitions of 5,000 calls (per call). *Beside the model*: the eager
model of hooks_windows_bench.py (8 small transformer blocks, Debian's torch) runs a step, then
one part is timed once (the parts take turns, 200 times each), median minus the median of an
empty timing; this is the cost with the caches as a model step leaves them, which is what an
engine pays. Each process runs under what ``truffld-env --windows requested`` prints (the real
injector, windows on demand only) with the slow-step trigger off, so every timed boundary is
one outside windows (any that lands in a window is left out). Never asserts a speed.

Run: /usr/bin/python3 tests/bench/step_boundary_bench.py --build build
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hooks_windows_bench as hwb  # noqa: E402  (the model and truffld-env's variables)

CHILD = hwb.CHILD.split("torch.manual_seed(0)")[0] + r"""
torch.manual_seed(0)
model = torch.nn.Sequential(*[Block() for _ in range(8)]).eval()
x = torch.randn(4, 64)
import ctypes, statistics
from truffld_hooks import naming, windows, nvtx
ids = ["req-%d" % i for i in range(4)]
cfg = truffld_hooks.install() or truffld_hooks._fallback_config()
with truffld_hooks.step_range(ids):
    pass
emitter, thread = nvtx.get(), windows._thread_state()
native, lib, query = emitter.native, emitter._lib, windows._fn
name = naming.step_name(ids, naming.STEP_EXECUTE, False, "decode", 4, 64)

def enter_exit():
    windows.exit_step(cfg, windows.enter_step(cfg, name))

def enter_exit_ctypes():
    emitter.native = None
    try:
        windows.exit_step(cfg, windows.enter_step(cfg, name))
    finally:
        emitter.native = native

py_name = getattr(naming, "step_name_py", naming.step_name)
py_enter = getattr(windows, "py_enter_step", None)

def enter_exit_python():
    windows.py_exit_step(cfg, py_enter(cfg, name))

def whole_python():
    with truffld_hooks._PyStepRange(ids, phase="decode", tokens=4, ctx=64):
        pass

def whole():
    with truffld_hooks.step_range(ids, phase="decode", tokens=4, ctx=64):
        pass

parts = {
    "empty": lambda: None,
    "name": lambda: py_name(ids, naming.STEP_EXECUTE, False, "decode", 4, 64),
    "enter/exit": enter_exit,
    "enter/exit (ctypes)": enter_exit_ctypes,
    "ctypes calls": lambda: lib.truffld_pynvtx_step_pop(
        lib.truffld_pynvtx_step_push(None, name.encode(), thread.ref) >> 3, thread.ref),
    "query": lambda: query(thread.ref),
    "step_range": whole,
}
if py_enter is not None and windows.enter_step is not py_enter:
    parts["enter/exit (Python)"] = enter_exit_python
    parts["step_range (Python)"] = whole_python
if native is not None:
    parts["native calls"] = lambda: native.step_pop(
        native.step_push(name, thread.address) >> 3, thread.address)
    if getattr(native, "step_name", None) is not None:
        parts["name (C)"] = lambda: native.step_name(ids, naming.STEP_EXECUTE, "decode", 4, 64)
clock = time.thread_time_ns
tight = {}
for key, call in parts.items():
    best = None
    for _ in range(7):
        t0 = clock()
        for _ in range(5000):
            call()
        per = (clock() - t0) / 5000.0
        best = per if best is None or per < best else best
    tight[key] = best
beside = {key: [] for key in parts}
keys = list(parts)
with torch.no_grad():
    for _ in range(20):
        model(x)
    for i in range(200 * len(keys)):
        model(x)
        key = keys[i % len(keys)]
        t0 = clock()
        parts[key]()
        spent = clock() - t0
        if not detail.ACTIVE[0]:
            beside[key].append(spent)
print(json.dumps({"tight": tight, "beside": {k: statistics.median(v) for k, v in beside.items()},
                  "native": native is not None, "mode": windows.mode[0]}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.environ.get("TRUFFLD_BUILD_DIR", ""))
    parser.add_argument("--runs", type=int, default=3, help="processes (medians across them)")
    args = parser.parse_args()
    build = os.path.abspath(args.build) if args.build else ""
    with hwb.tempfile.TemporaryDirectory(prefix="truffld-bench-") as out_dir:
        env = hwb.truffld_env(build, "--output-dir", out_dir, "--windows", "requested") \
            if build else None
        if env is None:
            print("skipped: tools/truffld-env --build-dir %s failed (no injector?)" % build)
            return 77
        env.update(BENCH_TRACED="1", OMP_NUM_THREADS="1", TRUFFLD_WINDOW_SLOW="0")
        runs = []
        for _ in range(args.runs):
            proc = subprocess.run([hwb.hookstest.PYTHON, "-c", CHILD], env=env,
                                  capture_output=True, text=True, timeout=600)
            for name in os.listdir(out_dir):
                os.unlink(os.path.join(out_dir, name))
            if proc.returncode != 0:
                sys.exit("benchmark child failed:\n" + proc.stderr[-3000:])
            runs.append(json.loads(proc.stdout.splitlines()[-1]))
    load = os.getloadavg()
    print("%d processes, windows mode %s, extension module loaded: %s; load average %.1f %.1f "
          "%.1f" % (len(runs), runs[0]["mode"], runs[0]["native"], *load))
    print("| part | tight loop, µs | beside the model, µs |")
    print("|---|---|---|")
    empty = hwb.median([r["beside"]["empty"] for r in runs])
    for key in runs[0]["tight"]:
        if key == "empty":
            continue
        tight = hwb.median([r["tight"][key] - r["tight"]["empty"] for r in runs]) / 1e3
        beside = (hwb.median([r["beside"][key] for r in runs]) - empty) / 1e3
        print("| %s | %.2f | %.2f |" % (key, tight, beside))
    return 0


if __name__ == "__main__":
    sys.exit(main())
