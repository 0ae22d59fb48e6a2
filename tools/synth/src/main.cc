// truffld-synth: command line front end of the fault-injected workload generator.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "truffld/cli.h"
#include "truffld/cli_parse.h"
#include "truffld/synth/config.h"
#include "truffld/synth/simulator.h"

namespace fs = std::filesystem;
using namespace truffld;
using namespace truffld::synth;

namespace {

const char* kDescription = R"(truffld-synth: writes the raw per-rank dumps a vLLM-like Qwen3-8B serving job would
produce under libcupti_injector.so, with faults injected on purpose and their ground truth.

Output (in --out DIR):
  truffld-<host>-r<rank>-p<pid>.jsonl[.zst]  one raw dump per rank (contract truffld.events/1)
  ledger.jsonl        one line per injected fault: id, class, target, rank, start, end (ns on
                      that rank's file clock), intensity, whether it is strong enough to label
  labels.jsonl        one line per (rank, step_index, view): abnormal, faulty operator families,
                      fault ids (the format truffld-diagnose --labels reads)
  requests.jsonl      one line per request: replica, arrival_step, prompt and output tokens, the
                      steps that ran a chunk of its prompt (prefill_steps) and that decoded it
  synth_summary.json  what was generated: ranks, steps, records, abnormal share, speed

Topology: each host runs one tensor-parallel group (TP = ranks/hosts). With --pp 1 (default) every
host is a data-parallel replica with its own request stream; with --pp N, N consecutive hosts form
one replica whose layers are split into N pipeline stages (vLLM's split), one stage per host:
every stage runs each step, stages after the first receive the activations (hidden states,
residual) from the previous host and stages before the last send them on, as NCCL send/recv
pairs named as truffld's hooks name vLLM's pynccl calls ('nccl:send, bytes=B, world_size=N,
impl=pynccl'); rank r = host * TP + TP index, and a send/recv pair links the same TP index on
neighbouring stages. Each host has its own clock offset (transfers are paired on the reference
time axis); CLOCK records carry realtime/monotonic_raw pairs with a per-host drift.

Workload: continuous batching mixes prefill and decode steps; decode steps replay CUDA graphs
(--no-cuda-graphs for eager). Step ranges are named
'step_execute_model[request_ids:a_b_c][phase:prefill|decode]', as truffld's hooks name them.

Fault classes (--faults, comma list or 'all' or 'none'):
  software       an operator family's host body is delayed (aten::mm, _C::rotary_embedding, ...)
  cuda_kernel    kernels of one class run slower (gemm, attention, norm, elementwise)
  memcpy         memory copies inflate
  contention     every kernel on one GPU slows during a short window
  communication  NCCL transfers slow down (ncclAllReduce, ncclAllGather, pipeline nccl:send/recv);
                 scope (--comm-scopes): group = every rank of a TP group, rank = one rank,
                 link = two ranks (TP ring neighbours, or a pipeline send/recv pair); each rank
                 in the scope gets a ledger entry (scope, peer) and its NCCL operator is labelled
  engine         a step's input preparation stalls (scheduling delay)
  host_gap       the host stalls between two operators, outside every operator range (a GC
                 pause); labels '(host outside operators)'
  sched_delay    the scheduler is slow: every rank of a replica starts the next step later;
                 labels the later step '(between steps)'
  direct_copy    the input copy every step issues directly under its step range (cudaMemcpyAsync
                 HtoD, no operator around it) runs slower; labels '(calls under the step)'
  device_starve  the compute stream waits on an event between two operators while the host keeps
                 launching: the GPU idles inside the step; labels '(device idle)'
Intensities are slowdown factors: negligible 1.1 (below the labelling threshold on purpose),
mild 1.3 and 1.6, strong 2.5 and 4.0. Labels by cost: every step a labelling fault touched is
re-simulated from the same state and random draws with the faults off; the step is labelled
abnormal only when the faults cost it at least --label-min-cost-share of that counterfactual
duration, otherwise it is absorbed (labelled normal; labels.jsonl and ledger.jsonl say cost_ns
and absorbed). --host-ahead makes steps device-bound (kernels x4 longer, a larger model per GPU)
so host stalls are absorbed by the GPU queue.

Presets (flags given after --preset still override it):
)";

const char* kExamples = R"(
Examples:
  truffld-synth --preset demo --out /tmp/demo            # README demo: 4 ranks, ~40 steps, clear faults
  truffld-synth --ranks 8 --hosts 2 --events 1000000 --out /tmp/t1m
  truffld-synth --preset suite --faults memcpy --intensities mild --seed 3 --out /tmp/s
  truffld-synth --ranks 2 --steps 100 --faults none --zstd --out /tmp/clean
  truffld-synth --preset demo --pp 2 --out /tmp/pp       # TP2 x PP2: one replica over 2 hosts
  truffld-synth --preset suite --faults communication --comm-scopes link --out /tmp/links
  truffld-synth --preset suite --device-windows steps:4:2 --two-tier --out /tmp/tt   # two capture tiers
)";

std::string Num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string Summary(const SynthConfig& cfg, const Simulator& sim, double seconds, double cpu_seconds) {
  const RunReport& rep = sim.report();
  int64_t steps = 0, abnormal[2] = {0, 0}, either = 0, absorbed = 0;
  for (const auto& per_rank : sim.faults().truth()) {
    for (const auto& st : per_rank) {
      ++steps;
      abnormal[0] += st.Abnormal(0) ? 1 : 0;
      abnormal[1] += st.Abnormal(1) ? 1 : 0;
      either += (st.Abnormal(0) || st.Abnormal(1)) ? 1 : 0;
      absorbed += (st.absorbed && (st.faulty[0] | st.faulty[1])) ? 1 : 0;
    }
  }
  int64_t by_class[kNumFaultClasses] = {};
  int64_t labelling = 0;
  for (const auto& e : sim.faults().ledger()) {
    ++by_class[static_cast<int>(e.cls)];
    labelling += e.sufficient ? 1 : 0;
  }
  std::string s = "{\n  \"schema\": \"truffld.synth_summary/1\",\n  \"seed\": " + std::to_string(cfg.seed) +
                  ",\n  \"ranks\": " + std::to_string(cfg.ranks) + ",\n  \"hosts\": " + std::to_string(cfg.hosts) +
                  ",\n  \"tp\": " + std::to_string(cfg.tp()) + ",\n  \"pp\": " + std::to_string(cfg.pp) +
                  ",\n  \"layers\": " + std::to_string(cfg.layers) +
                  ",\n  \"workload\": \"" + cfg.workload + "\",\n  \"cuda_graphs\": " +
                  (cfg.cuda_graphs ? "true" : "false") + ",\n  \"chunked_prefill\": " +
                  (cfg.chunked_prefill ? "true" : "false") + ",\n  \"phase_tags\": " + (cfg.phase_tags ? "true" : "false") +
                  ",\n  \"workload_tags\": " + (cfg.workload_tags ? "true" : "false") + ",\n  \"label_min_intensity\": " +
                  Num(cfg.label_min_intensity) + ",\n  \"label_min_cost_share\": " + Num(cfg.label_min_cost_share) +
                  ",\n  \"host_ahead\": " + (cfg.host_ahead ? "true" : "false") + ",\n  \"device_scale\": " +
                  Num(cfg.device_scale) + ",\n  \"slow_host\": " +
                  (cfg.slow_host < 0 ? std::string("null")
                                     : "{\"host\": \"node" + std::to_string(cfg.slow_host) + "\", \"index\": " +
                                           std::to_string(cfg.slow_host) + ", \"factor\": " + Num(cfg.slow_host_factor) + "}") +
                  ",\n  \"device_windows\": \"" + cfg.device_windows +
                  "\",\n  \"two_tier\": " + (cfg.two_tier ? "true" : "false") + ",\n  \"records\": " + std::to_string(rep.records) +
                  ",\n  \"bytes_uncompressed\": " + std::to_string(rep.bytes) +
                  ",\n  \"rank_steps\": " + std::to_string(steps) +
                  ",\n  \"abnormal_rank_steps\": {\"vertical\": " + std::to_string(abnormal[0]) +
                  ", \"horizontal\": " + std::to_string(abnormal[1]) + ", \"either\": " + std::to_string(either) +
                  "},\n  \"absorbed_rank_steps\": " + std::to_string(absorbed) + ",\n  \"abnormal_fraction\": " + Num(steps ? double(either) / double(steps) : 0.0) +
                  ",\n  \"faults\": {\"total\": " + std::to_string(sim.faults().ledger().size()) +
                  ", \"labelling\": " + std::to_string(labelling);
  for (int c = 0; c < kNumFaultClasses; ++c) {
    s += ", \"" + std::string(FaultClassName(static_cast<FaultClass>(c))) + "\": " + std::to_string(by_class[c]);
  }
  s += "},\n  \"seconds\": " + Num(seconds) + ",\n  \"cpu_seconds\": " + Num(cpu_seconds) +
       ",\n  \"records_per_second\": " + Num(seconds > 0 ? double(rep.records) / seconds : 0.0) +
       ",\n  \"records_per_cpu_second\": " + Num(cpu_seconds > 0 ? double(rep.records) / cpu_seconds : 0.0) +
       ",\n  \"hosts_clock\": [";
  for (size_t i = 0; i < rep.hosts.size(); ++i) {
    s += std::string(i ? ", " : "") + "{\"host\": \"" + rep.hosts[i].name + "\", \"offset_ns\": " +
         std::to_string(rep.hosts[i].offset_ns) + ", \"drift_ppm\": " + Num(rep.hosts[i].drift_ppm) + "}";
  }
  s += "],\n  \"files\": [";
  for (size_t i = 0; i < rep.ranks.size(); ++i) {
    const RankReport& r = rep.ranks[i];
    s += std::string(i ? "," : "") + "\n    {\"rank\": " + std::to_string(r.rank) + ", \"host\": \"" + r.host +
         "\", \"file\": \"" + r.file + "\", \"pid\": " + std::to_string(r.pid) + ", \"steps\": " +
         std::to_string(r.steps) + ", \"requests\": " + std::to_string(r.requests) + ", \"kernels\": " +
         std::to_string(r.kernels) + ", \"records\": " + std::to_string(r.records) + "}";
  }
  s += "\n  ]\n}\n";
  return s;
}

// The flags that are not SynthConfig fields: read as given, then applied over the config (and
// over a preset) by ApplyFlags.
struct CliFlags {
  std::string preset, faults = "all", intensities = "all", comm_scopes = "all";
  bool no_graphs = false, chunked = false, no_phase = false, no_workload = false, host_ahead = false;
  std::string slow_host, slow_family, windows = "all";
  bool two_tier = false, quiet = false;
};

// Declares every option, in --help's order, bound to `cfg`'s fields or to `f`.
void AddOptions(CLI::App& app, SynthConfig& cfg, CliFlags& f) {
  app.add_option("--preset", f.preset, "demo | small | suite | bench (applied first)");
  app.add_option("-o,--out", cfg.out_dir, "output directory (created; files in it are overwritten)")->required();
  app.add_option("--seed", cfg.seed, "random seed; same seed and flags give byte-identical output")->capture_default_str();
  app.add_option("--ranks", cfg.ranks, "number of ranks (processes)")->capture_default_str();
  app.add_option("--hosts", cfg.hosts, "number of hosts; each runs one TP group of ranks/hosts ranks")->capture_default_str();
  app.add_option("--pp", cfg.pp, "pipeline stages per replica, one per host (must divide --hosts)")->capture_default_str();
  app.add_option("--layers", cfg.layers, "decoder layers (Qwen3-8B has 36)")->capture_default_str();
  app.add_option("--steps", cfg.steps, "engine steps per host (0 = derive from --events)")->capture_default_str();
  app.add_option("--events", cfg.target_events, "approximate total records when --steps is 0 (10k .. 100M)")->capture_default_str();
  app.add_option("--workload", cfg.workload, "online (Poisson arrivals) or offline (queued batches)")->capture_default_str();
  app.add_option("--arrivals", cfg.arrivals_per_step, "online: mean new requests per step")->capture_default_str();
  app.add_option("--max-num-seqs", cfg.max_num_seqs, "running requests per host (decode batch bound)")->capture_default_str();
  app.add_flag("--no-cuda-graphs", f.no_graphs, "run decode steps eagerly instead of replaying CUDA graphs");
  app.add_option("--max-prefill-tokens", cfg.max_prefill_tokens, "token budget of one step (prefill; chunked: the whole step)")->capture_default_str();
  app.add_option("--prompt-scale", cfg.prompt_scale, "multiply every prompt length (0.1 = short chats, 8 = long documents)")->capture_default_str();
  app.add_flag("--chunked-prefill", f.chunked, "vLLM V1 scheduling: each step decodes every running request and fills its token budget with prompt chunks (phase mixed)");
  app.add_flag("--no-phase-tags", f.no_phase, "leave [phase:X] out of step names (older hooks, other engines)");
  app.add_flag("--no-workload-tags", f.no_workload, "leave [tokens:N][ctx:N] out of step names");
  app.add_option("--device-jitter", cfg.noise.device_jitter, "healthy noise: log-normal sigma of kernel and copy durations")->capture_default_str();
  app.add_option("--hiccup-rate", cfg.noise.hiccup_rate, "healthy noise: share of kernels that run long for no reason (unlabelled)")->capture_default_str();
  app.add_option("--hiccup-max", cfg.noise.hiccup_max, "healthy noise: how long at most (x its usual time; at least 1.15)")->capture_default_str();
  app.add_option("--host-jitter-scale", cfg.noise.host_scale, "healthy noise: factor on every host-side jitter")->capture_default_str();
  app.add_option("--faults", f.faults, "fault classes: all, none, or a comma list (see above)")->capture_default_str();
  app.add_option("--intensities", f.intensities, "all, mild, strong, negligible, or factors like 1.3,2.5")->capture_default_str();
  app.add_option("--comm-scopes", f.comm_scopes, "communication fault scopes: all, or a list of group,rank,link")->capture_default_str();
  app.add_option("--abnormal-fraction", cfg.abnormal_fraction, "target share of (rank, step) pairs with a labelled fault")->capture_default_str();
  app.add_option("--label-min-intensity", cfg.label_min_intensity, "faults weaker than this perturb but do not label")->capture_default_str();
  app.add_option("--label-min-cost-share", cfg.label_min_cost_share,
                 "a fault labels a step only when it costs >= this share of the step's fault-free duration")->capture_default_str();
  app.add_flag("--host-ahead", f.host_ahead, "device-bound steps (kernels x4 longer): the GPU queue absorbs host stalls");
  app.add_option("--device-scale", cfg.device_scale, "multiply every kernel and NCCL transfer's nominal time (--host-ahead: 4)")->capture_default_str();
  app.add_option("--slow-host", f.slow_host,
                 "H:FACTOR: every kernel on host H (from 0) takes FACTOR times longer in every step (a slower node; "
                 "labels no step; recorded in ledger.jsonl (class slow_host) and synth_summary.json; only other "
                 "replicas show it)");
  app.add_option("--device-name", cfg.device_name, "GPU model named in every META's devices")->capture_default_str();
  app.add_option("--slow-family", f.slow_family,
                 "FAMILY:FACTOR: the kernels of every FAMILY op (innermost backend family, e.g. aten::mm:1.2) take "
                 "FACTOR times longer on every host and step (a regression against another run; unlabelled)");
  app.add_option("--device-windows", f.windows,
                 "device activity recorded: all, off, or steps:N[:M] (M steps in every N; DEVICE_WINDOW edges)")->capture_default_str();
  app.add_flag("--two-tier", f.two_tier,
               "outside device windows also drop operator ranges and non-blocking API calls (the always-on tier)");
  app.add_flag("--zstd", cfg.zstd, "write .jsonl.zst dumps");
  app.add_option("--zstd-level", cfg.zstd_level, "zstd level")->capture_default_str();
  app.add_flag("-q,--quiet", f.quiet, "print nothing on success");
}

int UsageError(const std::string& message) {
  std::fprintf(stderr, "truffld-synth: %s\n", message.c_str());
  return kExitUsage;
}

// Presets apply first so explicit flags win: parse once to find it, then again over it. Returns
// the exit status when the command line ends the run (--help, a usage error).
std::optional<int> ParseWithPreset(CLI::App& app, int argc, char** argv, SynthConfig& cfg, CliFlags& f) {
  if (auto rc = ParseCommandLine(app, argc, argv)) return *rc;
  if (f.preset.empty()) return std::nullopt;
  SynthConfig base;
  Status st = ApplyPreset(f.preset, &base);
  if (!st.ok()) return UsageError(st.ToString());
  const double a0 = base.abnormal_fraction;
  cfg = base;
  f.faults = "all";
  f.intensities = "all";
  if (auto rc = ParseCommandLine(app, argc, argv)) return *rc;
  if (app.count("--faults") == 0) f.faults = "";
  if (app.count("--intensities") == 0) f.intensities = "";
  if (app.count("--abnormal-fraction") == 0) cfg.abnormal_fraction = a0;
  return std::nullopt;
}

// --faults: 'all', 'none', or a comma list of class names.
std::optional<int> ParseFaultList(const std::string& faults, SynthConfig* cfg) {
  cfg->fault_classes.clear();
  if (faults == "all") {
    cfg->fault_classes = AllFaultClasses();
    return std::nullopt;
  }
  if (faults == "none") return std::nullopt;
  size_t pos = 0;
  while (pos <= faults.size()) {
    size_t c = faults.find(',', pos);
    if (c == std::string::npos) c = faults.size();
    FaultClass fc;
    const std::string item = faults.substr(pos, c - pos);
    if (!ParseFaultClass(item, &fc)) {
      std::fprintf(stderr, "truffld-synth: --faults: unknown class '%s' (software, cuda_kernel, memcpy, "
                           "contention, communication, engine, host_gap, sched_delay, direct_copy, device_starve)\n", item.c_str());
      return kExitUsage;
    }
    cfg->fault_classes.push_back(fc);
    pos = c + 1;
  }
  return std::nullopt;
}

// The graph, capture-tier and slowdown flags (--no-cuda-graphs, --two-tier, --device-windows,
// --slow-family, --slow-host, --host-ahead) over `cfg`.
std::optional<int> ApplyDeviceFlags(const CLI::App& app, const CliFlags& f, SynthConfig* cfg) {
  cfg->cuda_graphs = !f.no_graphs;
  cfg->two_tier = cfg->two_tier || f.two_tier;
  if (Status st = ParseDeviceWindows(f.windows, cfg); !st.ok()) return UsageError(st.message());
  if (!f.slow_family.empty()) {
    if (Status st = ParseSlowFamily(f.slow_family, cfg); !st.ok()) return UsageError(st.message());
    if (Catalogue().Id(cfg->slow_family) < 0) {
      std::fprintf(stderr, "truffld-synth: --slow-family: no operator family '%s' in the model\n", cfg->slow_family.c_str());
      return kExitUsage;
    }
  }
  if (!f.slow_host.empty()) {
    if (Status st = ParseSlowHost(f.slow_host, cfg); !st.ok()) return UsageError(st.message());
  }
  if (f.host_ahead) {
    cfg->host_ahead = true;
    if (app.count("--device-scale") == 0) cfg->device_scale = 4.0;
  }
  return std::nullopt;
}

// Everything the flags say beyond SynthConfig's own fields, then the config's validation.
std::optional<int> ApplyFlags(const CLI::App& app, const CliFlags& f, SynthConfig* cfg) {
  if (auto rc = ApplyDeviceFlags(app, f, cfg)) return rc;
  cfg->chunked_prefill = cfg->chunked_prefill || f.chunked;
  cfg->phase_tags = cfg->phase_tags && !f.no_phase;
  cfg->workload_tags = cfg->workload_tags && !f.no_workload;
  if (!f.faults.empty()) {
    if (auto rc = ParseFaultList(f.faults, cfg)) return rc;
  }
  if (!f.intensities.empty()) {
    auto iv = ParseIntensities(f.intensities);
    if (!iv.ok()) return UsageError(iv.status().message());
    cfg->intensities = *iv;
  }
  auto sc = ParseCommScopes(f.comm_scopes);
  if (!sc.ok()) return UsageError(sc.status().message());
  cfg->comm_scopes = *sc;
  if (Status st = cfg->Validate(); !st.ok()) return UsageError(st.message());
  return std::nullopt;
}

// Runs the simulation into cfg.out_dir, writes synth_summary.json and (unless quiet) a one-line
// report; returns the exit status.
int Generate(const SynthConfig& cfg, bool quiet) {
  std::error_code ec;
  fs::create_directories(cfg.out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "truffld-synth: cannot create %s: %s\n", cfg.out_dir.c_str(), ec.message().c_str());
    return kExitOutput;
  }
  const std::string dir = cfg.out_dir;
  const int level = cfg.zstd ? cfg.zstd_level : 0;
  auto factory = [&](const std::string& name) -> Result<std::unique_ptr<ByteSink>> {
    const bool dump = name.rfind("truffld-", 0) == 0;
    return OpenFileSink((fs::path(dir) / name).string(), dump ? level : 0);
  };
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  Simulator sim(cfg, factory);
  if (Status st = sim.Run(); !st.ok()) {  // the simulation itself cannot fail: its sinks did
    std::fprintf(stderr, "truffld-synth: %s\n", st.ToString().c_str());
    return kExitOutput;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const std::string summary = Summary(cfg, sim, secs, cpu);
  auto sink = OpenFileSink((fs::path(dir) / "synth_summary.json").string(), 0);
  if (!sink.ok() || !(*sink)->Write(summary).ok() || !(*sink)->Close().ok()) {
    std::fprintf(stderr, "truffld-synth: cannot write %s/synth_summary.json\n", dir.c_str());
    return kExitOutput;
  }
  if (quiet) return 0;
  const RunReport& rep = sim.report();
  int64_t steps = 0;
  for (const auto& r : rep.ranks) steps += r.steps;
  std::printf("truffld-synth: %zu ranks, %lld rank-steps, %llu records (%.1f MB) in %.2f s wall, %.2f s CPU "
              "(%.2f M records per CPU second)\n",
              rep.ranks.size(), static_cast<long long>(steps), static_cast<unsigned long long>(rep.records),
              static_cast<double>(rep.bytes) / 1e6, secs, cpu, cpu > 0 ? double(rep.records) / cpu / 1e6 : 0.0);
  std::printf("  faults: %zu in ledger; see %s/synth_summary.json, ledger.jsonl, labels.jsonl\n",
              sim.faults().ledger().size(), dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  SynthConfig cfg;
  CLI::App app{std::string(kDescription) + PresetHelp() + kExamples, "truffld-synth"};
  app.footer(std::string("\n") + kExitStatusHelp);
  AddVersionFlag(app, "truffld-synth");
  app.get_formatter()->column_width(34);
  CliFlags flags;
  AddOptions(app, cfg, flags);
  if (auto rc = ParseWithPreset(app, argc, argv, cfg, flags)) return *rc;
  if (auto rc = ApplyFlags(app, flags, &cfg)) return *rc;
  return Generate(cfg, app.count("--quiet") != 0);
}
