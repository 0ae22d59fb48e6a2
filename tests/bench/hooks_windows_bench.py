"""Benchmark (ctest label bench): what each capture setting costs an eager engine whose steps
are bound by host launch time, on the CPU (issue #41), and what one detail window costs.

Workload: 8 small transformer blocks (4 tokens x 64 features, 4 heads, MLP 256), Debian's CPU
torch, one torch thread, no grad; each forward is one engine step through
``truffld_hooks.step_range`` with 4 request ids, phase, tokens and context (untraced: the same
loop with a no-op context). Each run is a fresh process: WARMUP steps, then STEPS timed steps.

Settings, each in a fresh process, interleaved round by round (the order rotates each round):
  untraced      no hooks, no injector
  hooks only    the hooks on PYTHONPATH, no NVTX tool (every layer on: nothing says windows)
  two-tier      what ``truffld-env`` prints by default (the real injector through NVTX
                injection, TRUFFLD_DEVICE_WINDOWS=cost:0.5:2, TRUFFLD_HOOKS_WINDOWS=1; its
                period starts at 512 steps, so 500 timed steps after 50 warm-up ones meet one
                planned window, at step 512, before the plan settles: hooks_step_probe.py
                --steps 4000 --injector measures the settled plan); the
                hooks follow windows only if this injector exports truffld_detail_window (the
                ``mode`` column says what the hooks found)
  two-tier (stand-in)  the hooks with tests/hooks/fake_nvtx_tool.c as the NVTX tool answering
                truffld_detail_window on the same plan and recording nothing: the hooks' side
                of two-tier alone (the stand-in plays steps:N:M plans only: with another
                default plan this row is left out, and the --plans rows stand in for it)
  two-tier (no slow trigger)  two-tier with TRUFFLD_WINDOW_SLOW=0: the planned windows only, so
                that the slow-step trigger's share (on a loaded machine a descheduled step
                passes 3x the median and opens a window) shows apart
  stand-in PLAN the stand-in again with each other plan of --plans (default steps:50:2 and
                steps:250:2)
  two-tier (ctypes step calls)  two-tier with TRUFFLD_HOOKS_NATIVE=0: the step boundary in
                Python, its calls through ctypes instead of the _truffld_pystep extension module
  two-tier (baseline hooks)  two-tier with the hooks of --baseline-hooks (another checkout's
                inject/python) on PYTHONPATH: an A/B of the hooks' code in the same rounds
  all           ``truffld-env --capture all`` (every layer always on, injector records all)

Reports per setting the median over rounds of the paired ratio (setting / the same round's
untraced run) with a bootstrap 95 % interval, for three measures: the wall time of the timed
loop; the process's CPU time over it (includes the injector's writer thread); and the
step-median ratio, from the main thread's CPU time per step: the median step outside and inside
windows, weighted by the share of steps in windows (robust to the load spikes of a shared
machine, which make the first two wide; it leaves out the writer thread). For settings with
windows also the cost of a detail window in thread CPU: the median step inside a window minus
the median step outside (us), and a whole window's excess over the outside median; and the CPU
cost of one step boundary pair outside a window. "step, median us" is the median step's thread
CPU time. With --paired N, each traced run then runs N more steps alternating, in blocks of 4,
with and without ``step_range`` (the in-process pair): the median step with it outside windows
over the median step without, in the same process, which the load of a shared machine moves far
less than the ratio between processes; it is what the always-on tier costs a step, caches and
all (a boundary's time in a tight loop, the "boundary pair" line, is far smaller). Never
asserts a speed.

Run: /usr/bin/python3 tests/bench/hooks_windows_bench.py --build build [--rounds 10]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "hooks"))
import hookstest  # noqa: E402
import paired_ratio  # noqa: E402  (tests/bench, beside this file)

CHILD = r"""
import contextlib, json, os, time
import torch, torch.nn.functional as F
torch.set_num_threads(1)
traced = os.environ.get("BENCH_TRACED") == "1"
if traced:
    import truffld_hooks
    from truffld_hooks import detail

class Block(torch.nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.out = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
    def forward(self, x):
        t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(t, 3, self.heads, d // self.heads).unbind(1)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        att = F.softmax(torch.matmul(q, k.transpose(-1, -2)) * (d // self.heads) ** -0.5, dim=-1)
        x = x + self.out(torch.matmul(att, v).transpose(0, 1).reshape(t, d))
        return x + self.down(F.gelu(self.up(self.ln2(x))))

torch.manual_seed(0)
model = torch.nn.Sequential(*[Block() for _ in range(8)]).eval()
x = torch.randn(4, 64)
ids = ["req-%d" % i for i in range(4)]
steps, warmup = int(os.environ["BENCH_STEPS"]), int(os.environ["BENCH_WARMUP"])
per_step, per_step_cpu, inside = [], [], []
clock, cpu_clock = time.perf_counter_ns, time.thread_time_ns
with torch.no_grad():
    for i in range(warmup + steps):
        if i == warmup:
            wall0, cpu0 = time.perf_counter(), time.process_time()
        t0, c0 = clock(), cpu_clock()
        if traced:
            with truffld_hooks.step_range(ids, phase="decode", tokens=4, ctx=64 + 4 * i):
                inside.append(detail.ACTIVE[0])
                model(x)
        else:
            model(x)
        per_step_cpu.append(cpu_clock() - c0)
        per_step.append(clock() - t0)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    paired = {"with": [], "without": []}
    if traced:
        # the same steps with and without step_range, alternating blocks of 4 (in-process pair)
        for i in range(int(os.environ.get("BENCH_PAIRED", "0"))):
            use = "with" if (i // 4) % 2 else "without"
            c0 = cpu_clock()
            if use == "with":
                with truffld_hooks.step_range(ids, phase="decode", tokens=4, ctx=64 + 4 * i):
                    was_inside = detail.ACTIVE[0]
                    model(x)
                if was_inside:
                    continue
            else:
                model(x)
            paired[use].append(cpu_clock() - c0)
out = {"paired": paired, "wall": wall, "cpu": cpu, "per_step_ns": per_step[warmup:],
       "per_step_cpu_ns": per_step_cpu[warmup:],
       "inside": inside[warmup:] if traced else []}
if traced:
    out["windows"] = truffld_hooks.stats()["windows"]
    from truffld_hooks import windows
    if windows._fn is not None and not detail.ACTIVE[0]:
        # one step boundary pair outside a window (what every step pays), best of 7 x 20000
        cfg, fn, ref = truffld_hooks._config, windows._fn, windows._thread_state().ref
        def best(call, n=20000):
            times = []
            for _ in range(7):
                t0 = time.thread_time_ns()
                for _ in range(n):
                    call()
                times.append((time.thread_time_ns() - t0) / n)
            return min(times)
        began, ended = windows.step_began, windows.step_ended
        out["boundary_pair_ns"] = best(lambda: ended(cfg, began(cfg)))
        out["query_ns"] = best(lambda: fn(ref))
        out["empty_call_ns"] = best(lambda: None)
print(json.dumps(out))
"""


def truffld_env(build, *args):
    """The variables ``tools/truffld-env`` exports with ``args`` (None when it fails)."""
    tool = os.path.join(hookstest.SOURCE_DIR, "tools", "truffld-env")
    proc = subprocess.run(["bash", "-c", 'eval "$("$0" --build-dir "$1" "${@:2}")" && env -0',
                           tool, build] + list(args), capture_output=True, text=True,
                          env=_clean_env())
    if proc.returncode != 0:
        return None
    return dict(item.split("=", 1) for item in proc.stdout.split("\0") if "=" in item)


def _clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TRUFFLD_", "NVTX_", "CUDA_INJECTION", "FAKE_"))}
    env.pop("PYTHONPATH", None)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def settings(build, shim, tool, out_dir, extra_plans, baseline_hooks=""):
    found, skipped = {}, []
    found["untraced"] = _clean_env()
    hooks = dict(_clean_env(), PYTHONPATH=hookstest.HOOKS_SRC, BENCH_TRACED="1")
    if shim:
        hooks["TRUFFLD_PYNVTX_LIB"] = shim
    found["hooks only"] = hooks
    for name, args in (("two-tier", ()), ("all", ("--capture", "all"))):
        env = truffld_env(build, "--output-dir", out_dir, *args) if build else None
        if env is None:
            skipped.append("%s: tools/truffld-env --build-dir %s failed (no injector?)"
                           % (name, build))
            continue
        env.update(BENCH_TRACED="1", OMP_NUM_THREADS="1")
        found[name] = env
        if name == "two-tier":
            found["two-tier (no slow trigger)"] = dict(env, TRUFFLD_WINDOW_SLOW="0")
            found["two-tier (ctypes step calls)"] = dict(env, TRUFFLD_HOOKS_NATIVE="0")
            if baseline_hooks:
                found["two-tier (baseline hooks)"] = dict(env, PYTHONPATH=baseline_hooks)
        if name == "two-tier" and tool:
            plan = env["TRUFFLD_DEVICE_WINDOWS"]
            own = [("two-tier (stand-in)", plan)] if plan.startswith("steps:") else []
            if not own:
                skipped.append("two-tier (stand-in): the stand-in tool plays steps:N:M plans, not %s"
                               % plan)
            for label, each in own + [("stand-in " + p, p) for p in extra_plans if p != plan]:
                found[label] = dict(hooks, NVTX_INJECTION64_PATH=tool, FAKE_DETAIL_WINDOW=each,
                                    TRUFFLD_DEVICE_WINDOWS=each, TRUFFLD_HOOKS_WINDOWS="1")
    if not tool:
        skipped.append("two-tier (stand-in): no TRUFFLD_TEST_NVTX_TOOL")
    return found, skipped


def run_one(env, steps, warmup, out_dir, paired=0):
    env = dict(env, BENCH_STEPS=str(steps), BENCH_WARMUP=str(warmup), BENCH_PAIRED=str(paired))
    proc = subprocess.run([hookstest.PYTHON, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=600)
    for name in os.listdir(out_dir):   # dumps of the real injector: not needed, can be large
        os.unlink(os.path.join(out_dir, name))
    if proc.returncode != 0:
        sys.exit("benchmark child failed:\n" + proc.stderr[-3000:])
    return json.loads(proc.stdout.splitlines()[-1])


def median(values):
    return statistics.median(values)


def split(run, key="per_step_cpu_ns"):
    """(steps inside windows, steps outside) of one run, thread CPU ns per step."""
    steps, inside = run[key], run["inside"] or [True] * len(run[key])
    return ([t for t, i in zip(steps, inside) if i], [t for t, i in zip(steps, inside) if not i])


def robust_step(run):
    """A step's expected thread CPU from medians, insensitive to load spikes: the median step
    outside and inside windows weighted by the run's share of steps in windows."""
    ins, outs = split(run)
    if not ins or not outs:
        return median(ins or outs)
    share = len(ins) / float(len(ins) + len(outs))
    return (1 - share) * median(outs) + share * median(ins)


def window_cost(run):
    """(us of thread CPU per window step over an outside step, us per whole window) or None."""
    ins, outs = split(run)
    if not ins or not outs:
        return None
    base = median(outs)
    windows, current = [], None
    for t, i in zip(run["per_step_cpu_ns"], run["inside"]):
        if i:
            current = (current or 0) + (t - base)
        elif current is not None:
            windows.append(current)
            current = None
    return (median(ins) - base) / 1e3, (median(windows) / 1e3 if windows else float("nan"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.environ.get("TRUFFLD_BUILD_DIR", ""))
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--plans", default="steps:50:2,steps:250:2",
                        help="window plans also run with the stand-in (comma-separated)")
    parser.add_argument("--paired", type=int, default=0,
                        help="after the timed steps, this many more steps alternating with and "
                        "without step_range in blocks of 4 (the in-process pair; 0: none)")
    parser.add_argument("--json", help="write every run's figures here")
    parser.add_argument("--baseline-hooks", default="",
                        help="another checkout's inject/python: adds the setting *two-tier "
                        "(baseline hooks)*, two-tier with those hooks (an A/B of hooks code)")
    parser.add_argument("--only", help="run only these settings (comma-separated names; "
                        "untraced is always run)")
    args = parser.parse_args()
    build = os.path.abspath(args.build) if args.build else ""
    with tempfile.TemporaryDirectory(prefix="truffld-bench-") as out_dir:
        found, skipped = settings(build, os.environ.get("TRUFFLD_PYNVTX_LIB", ""),
                                  os.environ.get("TRUFFLD_TEST_NVTX_TOOL", ""), out_dir,
                                  [p for p in args.plans.split(",") if p],
                                  os.path.abspath(args.baseline_hooks) if args.baseline_hooks
                                  else "")
        if args.only:
            wanted = {"untraced"} | {n.strip() for n in args.only.split(",")}
            missing = wanted - set(found)
            if missing:
                sys.exit("--only: no setting named %s (known: %s)"
                         % (", ".join(sorted(missing)), ", ".join(found)))
            found = {k: v for k, v in found.items() if k in wanted}
        names = list(found)
        runs = {name: [] for name in names}
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                runs[name].append(run_one(found[name], args.steps, args.warmup, out_dir,
                                          args.paired))
            print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr, flush=True)
    load = os.getloadavg()
    print("%d rounds, %d timed steps after %d warm-up steps per run; load average %.1f %.1f %.1f"
          % (args.rounds, args.steps, args.warmup, *load))
    base = runs["untraced"]
    print("| setting | hooks' windows | step, median µs | wall ratio (95% CI) | CPU ratio (95% CI) "
          "| step-median ratio (95% CI) | window step, +µs | window, +µs |")
    print("|---|---|---|---|---|---|---|---|")
    summary = {}
    for name in names:
        row = {}
        for key, value in (("wall", lambda run: run["wall"]), ("cpu", lambda run: run["cpu"]),
                           ("steps", robust_step)):
            ratios = [value(run) / value(b) for run, b in zip(runs[name], base)]
            row[key] = paired_ratio.bootstrap_median_ci(ratios)
        step_us = median([median(run["per_step_cpu_ns"]) for run in runs[name]]) / 1e3
        costs = [c for c in (window_cost(run) for run in runs[name]) if c is not None]
        mode = runs[name][0].get("windows", {}).get("mode", "–")
        cost = ("%.0f" % median([c[0] for c in costs]), "%.0f" % median([c[1] for c in costs])) \
            if costs else ("–", "–")
        print("| %s | %s | %.0f | %.3fx (%.3f–%.3f) | %.3fx (%.3f–%.3f) | %.3fx (%.3f–%.3f) "
              "| %s | %s |" % ((name, mode, step_us) + row["wall"] + row["cpu"] + row["steps"]
                               + cost))
        summary[name] = dict(row, step_us=step_us, mode=mode, window_cost_us=cost)
    for name in names:
        pairs = [run for run in runs[name] if "boundary_pair_ns" in run]
        if pairs:
            print("%s: one step boundary pair (after push, after pop) outside a window %.0f ns "
                  "(of which the injector query %.0f ns x 2; an empty Python call %.0f ns), "
                  "median of %d runs' best thread CPU time"
                  % (name, median([r["boundary_pair_ns"] for r in pairs]),
                     median([r["query_ns"] for r in pairs]),
                     median([r["empty_call_ns"] for r in pairs]), len(pairs)))
    for name in names:
        pairs = [run["paired"] for run in runs[name] if run.get("paired", {}).get("with")]
        if pairs:
            ratios = [median(p["with"]) / median(p["without"]) for p in pairs]
            extra = [(median(p["with"]) - median(p["without"])) / 1e3 for p in pairs]
            print("%s: in-process pair, a step with step_range outside windows / the same step "
                  "without, alternating blocks of 4: %.3fx (%.3f–%.3f), +%.1f µs (median of "
                  "%d runs)" % ((name,) + paired_ratio.bootstrap_median_ci(ratios)
                                + (median(extra), len(pairs))))
    for line in skipped:
        print("skipped: " + line)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"summary": summary, "runs": runs, "load": load}, handle)


if __name__ == "__main__":
    main()
