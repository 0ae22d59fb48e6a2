// Fault class names, intensity levels, presets and validation for truffld-synth.
#include "truffld/synth/config.h"

#include <charconv>
#include <cstdlib>
#include <cmath>

namespace truffld::synth {

namespace {
constexpr const char* kClassNames[kNumFaultClasses] = {"software",   "cuda_kernel",   "memcpy",
                                                       "contention", "communication", "engine",
                                                       "host_gap",   "sched_delay",   "direct_copy",
                                                       "device_starve"};
constexpr const char* kClassLayers[kNumFaultClasses] = {"software", "cuda",    "cuda",
                                                        "hardware", "network", "engine",
                                                        "software", "engine",  "cuda",
                                                        "cuda"};
}  // namespace

const char* FaultClassName(FaultClass c) noexcept { return kClassNames[static_cast<int>(c)]; }
const char* FaultClassLayer(FaultClass c) noexcept { return kClassLayers[static_cast<int>(c)]; }

bool ParseFaultClass(std::string_view s, FaultClass* out) noexcept {
  for (int i = 0; i < kNumFaultClasses; ++i) {
    if (s == kClassNames[i]) {
      *out = static_cast<FaultClass>(i);
      return true;
    }
  }
  if (s == "cuda" || s == "kernel") { *out = FaultClass::kCudaKernel; return true; }
  if (s == "comm" || s == "network") { *out = FaultClass::kCommunication; return true; }
  if (s == "scheduling") { *out = FaultClass::kEngine; return true; }
  return false;
}

std::vector<FaultClass> AllFaultClasses() {
  std::vector<FaultClass> v;
  for (int i = 0; i < kNumFaultClasses; ++i) v.push_back(static_cast<FaultClass>(i));
  return v;
}

const std::vector<IntensityLevel>& IntensityLevels() {
  static const std::vector<IntensityLevel> kLevels = {
      {"negligible", 1.1}, {"mild", 1.3}, {"mild", 1.6}, {"strong", 2.5}, {"strong", 4.0}};
  return kLevels;
}

const char* IntensityName(double factor) noexcept {
  for (const auto& l : IntensityLevels()) {
    if (std::fabs(l.factor - factor) < 1e-9) return l.name;
  }
  return "custom";
}

const char* CommScopeName(CommScope s) noexcept {
  static const char* kNames[kNumCommScopes] = {"group", "rank", "link"};
  return kNames[static_cast<int>(s)];
}

Result<std::vector<CommScope>> ParseCommScopes(std::string_view spec) {
  std::vector<CommScope> out;
  if (spec == "all") return std::vector<CommScope>{CommScope::kGroup, CommScope::kRank, CommScope::kLink};
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    const std::string_view item = spec.substr(pos, comma - pos);
    bool found = false;
    for (int i = 0; i < kNumCommScopes; ++i) {
      if (item == CommScopeName(static_cast<CommScope>(i))) {
        out.push_back(static_cast<CommScope>(i));
        found = true;
      }
    }
    if (!found) {
      return InvalidArgument("--comm-scopes: unknown scope '" + std::string(item) + "' (group, rank, link or all)");
    }
    pos = comma + 1;
  }
  return out;
}

Status ParseDeviceWindows(std::string_view spec, SynthConfig* cfg) {
  cfg->device_windows = std::string(spec);
  cfg->window_every = cfg->window_steps = 0;
  if (spec == "all" || spec == "off") return Status::Ok();
  const std::string bad = "--device-windows must be all, off or steps:N[:M] with 1 <= M <= N, got '" +
                          std::string(spec) + "'";
  if (spec.substr(0, 6) != "steps:") return InvalidArgument(bad);
  std::string_view rest = spec.substr(6);
  const size_t colon = rest.find(':');
  auto number = [](std::string_view v, int* out) {
    auto r = std::from_chars(v.data(), v.data() + v.size(), *out);
    return r.ec == std::errc() && r.ptr == v.data() + v.size();
  };
  int every = 0, window = 1;
  if (!number(rest.substr(0, colon), &every)) return InvalidArgument(bad);
  if (colon != std::string_view::npos && !number(rest.substr(colon + 1), &window)) return InvalidArgument(bad);
  if (every < 1 || every > 1000000 || window < 1 || window > every) return InvalidArgument(bad);
  cfg->window_every = every;
  cfg->window_steps = window;
  cfg->device_windows = "steps:" + std::to_string(every) + ":" + std::to_string(window);
  return Status::Ok();
}

Status ParseSlowHost(std::string_view spec, SynthConfig* cfg) {
  const std::string bad = "--slow-host must be H:FACTOR (host index from 0, factor in [1, 10]), got '" +
                          std::string(spec) + "'";
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos) return InvalidArgument(bad);
  int host = -1;
  const std::string_view h = spec.substr(0, colon);
  auto r = std::from_chars(h.data(), h.data() + h.size(), host);
  if (r.ec != std::errc() || r.ptr != h.data() + h.size() || host < 0) return InvalidArgument(bad);
  const std::string f(spec.substr(colon + 1));
  char* end = nullptr;
  const double factor = f.empty() ? NAN : std::strtod(f.c_str(), &end);
  if (f.empty() || end != f.c_str() + f.size() || !(factor >= 1.0 && factor <= 10.0)) return InvalidArgument(bad);
  cfg->slow_host = host;
  cfg->slow_host_factor = factor;
  return Status::Ok();
}

Status ParseSlowFamily(std::string_view spec, SynthConfig* cfg) {
  const std::string bad = "--slow-family must be FAMILY:FACTOR (e.g. aten::mm:1.2, factor in [1, 10]), got '" +
                          std::string(spec) + "'";
  const size_t colon = spec.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return InvalidArgument(bad);
  const std::string f(spec.substr(colon + 1));
  char* end = nullptr;
  const double factor = f.empty() ? NAN : std::strtod(f.c_str(), &end);
  if (f.empty() || end != f.c_str() + f.size() || !(factor >= 1.0 && factor <= 10.0)) return InvalidArgument(bad);
  cfg->slow_family = std::string(spec.substr(0, colon));
  cfg->slow_family_factor = factor;
  return Status::Ok();
}

Result<std::vector<double>> ParseIntensities(std::string_view spec) {
  std::vector<double> out;
  if (spec == "all") {
    for (const auto& l : IntensityLevels()) out.push_back(l.factor);
    return out;
  }
  if (spec == "mild" || spec == "strong" || spec == "negligible") {
    for (const auto& l : IntensityLevels()) {
      if (spec == l.name) out.push_back(l.factor);
    }
    return out;
  }
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string item(spec.substr(pos, comma - pos));
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || !(v > 1.0) || v > 100.0) {
      return InvalidArgument("--intensities: '" + item +
                             "' is not a slowdown factor in (1, 100]; use mild, strong, all or a list like 1.3,2.5");
    }
    out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

Status SynthConfig::Validate() const {
  if (ranks < 1 || ranks > 4096) return InvalidArgument("--ranks must be in [1, 4096]");
  if (hosts < 1 || hosts > ranks || ranks % hosts != 0) {
    return InvalidArgument("--hosts must divide --ranks (each host runs ranks/hosts tensor-parallel ranks)");
  }
  if (pp < 1 || hosts % pp != 0) {
    return InvalidArgument("--pp must divide --hosts (each pipeline stage runs on its own host)");
  }
  if (layers < 1 || layers > 256) return InvalidArgument("--layers must be in [1, 256]");
  if (layers < pp) return InvalidArgument("--layers must be >= --pp (every stage holds at least one layer)");
  if (steps < 0) return InvalidArgument("--steps must be >= 0 (0 = derive from --events)");
  if (steps == 0 && target_events < 1000) return InvalidArgument("--events must be >= 1000");
  if (workload != "online" && workload != "offline") {
    return InvalidArgument("--workload must be 'online' or 'offline'");
  }
  if (max_num_seqs < 1 || max_num_seqs > 1024) return InvalidArgument("--max-num-seqs must be in [1, 1024]");
  if (max_prefill_tokens < 16 || max_prefill_tokens > 65536) {
    return InvalidArgument("--max-prefill-tokens must be in [16, 65536]");
  }
  if (!(prompt_scale > 0 && prompt_scale <= 100)) return InvalidArgument("--prompt-scale must be in (0, 100]");
  if (!(noise.device_jitter >= 0 && noise.device_jitter <= 1)) return InvalidArgument("--device-jitter must be in [0, 1]");
  if (!(noise.hiccup_rate >= 0 && noise.hiccup_rate <= 1)) return InvalidArgument("--hiccup-rate must be in [0, 1]");
  if (!(noise.hiccup_max >= 1.15 && noise.hiccup_max <= 10)) return InvalidArgument("--hiccup-max must be in [1.15, 10]");
  if (!(noise.host_scale >= 0 && noise.host_scale <= 10)) return InvalidArgument("--host-jitter-scale must be in [0, 10]");
  if (!(abnormal_fraction >= 0.0 && abnormal_fraction <= 0.95)) {
    return InvalidArgument("--abnormal-fraction must be in [0, 0.95]");
  }
  if (!(label_min_cost_share >= 0 && label_min_cost_share <= 1)) {
    return InvalidArgument("--label-min-cost-share must be in [0, 1]");
  }
  if (!(device_scale >= 0.1 && device_scale <= 100)) return InvalidArgument("--device-scale must be in [0.1, 100]");
  if (slow_host >= hosts) {
    return InvalidArgument("--slow-host " + std::to_string(slow_host) + ": there are only " + std::to_string(hosts) +
                           " hosts (indices from 0)");
  }
  if (!fault_classes.empty() && intensities.empty()) return InvalidArgument("--intensities is empty");
  if (comm_scopes.empty()) return InvalidArgument("--comm-scopes is empty");
  if (two_tier && device_windows == "all") {
    return InvalidArgument("--two-tier needs --device-windows steps:N[:M] or off (detail windows)");
  }
  if (out_dir.empty()) return InvalidArgument("--out DIR is required");
  if (zstd_level < 1 || zstd_level > 19) return InvalidArgument("--zstd-level must be in [1, 19]");
  return Status::Ok();
}

Status ApplyPreset(std::string_view name, SynthConfig* cfg) {
  if (name == "demo") {  // README: 4 ranks on 2 hosts (TP2 x 2 replicas), ~40 steps, a few clear faults
    cfg->ranks = 4;
    cfg->hosts = 2;
    cfg->layers = 8;
    cfg->steps = 40;
    cfg->max_num_seqs = 6;  // merge writes one tree per request: keep the demo's output small
    cfg->fault_classes = AllFaultClasses();
    cfg->intensities = {2.5, 4.0};
    cfg->abnormal_fraction = 0.25;
  } else if (name == "small") {  // unit/integration tests: seconds, every feature exercised
    cfg->ranks = 2;
    cfg->hosts = 1;
    cfg->layers = 4;
    cfg->steps = 24;
    cfg->fault_classes = AllFaultClasses();
  } else if (name == "suite") {  // evaluation scenarios: enough steps for GMMs and splits
    cfg->ranks = 4;
    cfg->hosts = 2;
    cfg->layers = 4;
    cfg->steps = 120;
    cfg->max_num_seqs = 8;
    cfg->fault_classes = AllFaultClasses();
  } else if (name == "bench") {  // throughput runs: pair with --events
    cfg->ranks = 8;
    cfg->hosts = 2;
    cfg->fault_classes = AllFaultClasses();
  } else {
    return InvalidArgument("unknown --preset '" + std::string(name) + "'; known: demo, small, suite, bench");
  }
  return Status::Ok();
}

std::string PresetHelp() {
  return "  demo   4 ranks on 2 hosts (2 TP2 replicas), 8 layers, 40 steps, <= 6 requests per step,\n"
         "         strong faults on ~25% of steps\n"
         "  small  2 ranks, 4 layers, 24 steps, all fault classes (what the tests use)\n"
         "  suite  4 ranks on 2 hosts, 4 layers, 120 steps, <= 8 requests per step, all fault classes\n"
         "  bench  8 ranks on 2 hosts, 36 layers, size set by --events (throughput runs)\n"
         "  (any preset + --pp 2: the hosts of a replica become pipeline stages, e.g. demo = TP2 x PP2)\n";
}

}  // namespace truffld::synth
