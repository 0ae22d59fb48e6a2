"""What the benchmark runs: the synthetic suites, the healthy workload shapes and the real traces.

Pure data: each entry is (name, truffld-synth arguments) so the report can print the exact flags.
  default suite  every fault class x {mild, strong} at a realistic rate (--abnormal-fraction 0.1)
                 plus a mixed scenario (all classes, all intensities incl. negligible 1.1) and a
                 host-ahead scenario (device-bound steps, software and host_gap faults at every
                 intensity: the GPU queue absorbs most of them, so most are labelled normal by
                 cost), per seed
  stress suite   the former high-rate suite (--abnormal-fraction 0.5): mixed per seed, and in the
                 full run also every class at strong intensity (seed 1)
  healthy shapes --faults none over many workload shapes (false-alarm rates)
"""
import glob
import os

CLASSES = ["software", "cuda_kernel", "memcpy", "contention", "communication", "engine",
           "host_gap", "sched_delay", "direct_copy", "device_starve"]
INTENSITIES = ["mild", "strong"]
DEFAULT_RATE = "0.1"
STRESS_RATE = "0.5"


def seeds(quick):
    return [1] if quick else [1, 2, 3]


def default_suite(quick):
    """[(name, args, meta)] with meta = {class, intensity, seed}."""
    out = []
    for seed in seeds(quick):
        base = ["--preset", "suite", "--abnormal-fraction", DEFAULT_RATE, "--seed", str(seed)]
        for cls in CLASSES:
            for level in INTENSITIES:
                out.append((f"{cls}-{level}-s{seed}", base + ["--faults", cls, "--intensities", level],
                            {"class": cls, "intensity": level, "seed": seed}))
        out.append((f"mixed-s{seed}", base, {"class": "mixed", "intensity": "all", "seed": seed}))
        out.append((f"host-ahead-software-host_gap-s{seed}",
                    base + ["--host-ahead", "--faults", "software,host_gap", "--intensities", "all"],
                    {"class": "host-ahead software+host_gap", "intensity": "all", "seed": seed}))
    return out


def stress_suite(quick):
    out = []
    for seed in seeds(quick):
        out.append((f"stress-mixed-s{seed}", ["--preset", "suite", "--abnormal-fraction", STRESS_RATE,
                                              "--seed", str(seed)], {"class": "mixed", "intensity": "all", "seed": seed}))
    if not quick:
        for cls in CLASSES:
            out.append((f"stress-{cls}-strong-s1", ["--preset", "suite", "--abnormal-fraction", STRESS_RATE, "--seed", "1",
                                                    "--faults", cls, "--intensities", "strong"],
                        {"class": cls, "intensity": "strong", "seed": 1}))
    return out


# Healthy workload shapes: (name, what it covers, flags). Most use 8 layers and 150 steps per host.
_S = ["--layers", "8", "--steps", "150"]
SHAPES = [
    ("decode-batch-1", "decode batches of 1 request (TP2)", ["--ranks", "2", "--max-num-seqs", "1", "--arrivals", "0.05"] + _S),
    ("decode-batch-256", "decode batches up to 256 requests (TP4)",
     ["--ranks", "4", "--hosts", "1", "--max-num-seqs", "256", "--arrivals", "10"] + _S),
    ("online-default", "online Poisson arrivals, <= 48 requests (TP2)", ["--ranks", "2"] + _S),
    ("prefill-short", "short prompts (prompt lengths x0.1)", ["--ranks", "2", "--prompt-scale", "0.1"] + _S),
    ("prefill-8k", "long prompts (x8), 8,192-token step budget",
     ["--ranks", "2", "--prompt-scale", "8", "--max-prefill-tokens", "8192"] + _S),
    ("chunked-prefill", "mixed steps (chunked prefill)", ["--ranks", "2", "--chunked-prefill"] + _S),
    ("no-tags", "no [phase:] / [tokens:] tags in step names", ["--ranks", "2", "--no-phase-tags", "--no-workload-tags"] + _S),
    ("chunked-no-tags", "chunked prefill without tags",
     ["--ranks", "2", "--chunked-prefill", "--no-phase-tags", "--no-workload-tags"] + _S),
    ("eager", "CUDA graphs off (eager decode)", ["--ranks", "2", "--no-cuda-graphs"] + _S),
    ("tp1", "TP 1 (one rank)", ["--ranks", "1"] + _S),
    ("tp4", "TP 4 on one host", ["--ranks", "4", "--hosts", "1"] + _S),
    ("tp8", "TP 8 on one host", ["--ranks", "8", "--hosts", "1"] + _S),
    ("dp2-tp2", "two hosts, a TP2 replica each", ["--ranks", "4", "--hosts", "2"] + _S),
    ("pp2-tp2", "PP 2 over two hosts, TP2 per stage", ["--ranks", "4", "--hosts", "2", "--pp", "2"] + _S),
    ("offline", "offline (queued batches)", ["--ranks", "2", "--workload", "offline"] + _S),
    ("host-ahead", "device-bound steps (--host-ahead: kernels x4), the GPU queue stays deep (TP2)",
     ["--ranks", "2", "--host-ahead"] + _S),
    ("suite-preset", "the suite preset (4 ranks, 2 hosts, 4 layers, 120 steps)", ["--preset", "suite"]),
    ("demo-preset", "the demo preset (4 ranks, 2 hosts, 40 steps)", ["--preset", "demo"]),
    ("long-2000", "a long run: 2,000 steps (TP2, 4 layers)", ["--ranks", "2", "--layers", "4", "--steps", "2000"]),
]
QUICK_SHAPES = {"decode-batch-1", "decode-batch-256", "prefill-short", "prefill-8k", "chunked-prefill", "no-tags",
                "eager", "tp1", "tp8", "pp2-tp2", "offline", "host-ahead", "long-2000"}


def healthy_shapes(quick):
    """[(name, description, args, seed)]; the full run uses 2 seeds per shape (1 for the long run)."""
    out = []
    for name, desc, args in SHAPES:
        if quick and name not in QUICK_SHAPES:
            continue
        ss = [1] if quick or name == "long-2000" else [1, 2]
        if quick and name == "long-2000":
            args = [a if a != "2000" else "1000" for a in args]
            name, desc = "long-1000", "a long run: 1,000 steps (TP2, 4 layers; the full run uses 2,000)"
        for s in ss:
            out.append((name, desc, args + ["--faults", "none", "--seed", str(s)], s))
    return out


def shared_data_dir():
    """TRUFFLD_SHARED_DATA, else ../shared/data next to the checkout, else /work/shared/data."""
    env = os.environ.get("TRUFFLD_SHARED_DATA")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    cand = os.path.normpath(os.path.join(here, "..", "..", "..", "shared", "data"))
    return cand if os.path.isdir(cand) else "/work/shared/data"


def real_traces(data_dir):
    """[(name, path)] of kineto/*.json.gz and nsys/*.sqlite under data_dir, sorted."""
    files = sorted(glob.glob(os.path.join(data_dir, "kineto", "*.json.gz"))) + \
        sorted(glob.glob(os.path.join(data_dir, "nsys", "*.sqlite")))
    out = []
    for p in files:
        b = os.path.basename(p)
        for suf in (".json.gz", ".sqlite"):
            if b.endswith(suf):
                b = b[: -len(suf)]
        out.append((f"{os.path.basename(os.path.dirname(p))}/{b}", p))
    return out
