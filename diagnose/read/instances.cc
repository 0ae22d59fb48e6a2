// StringTable interning and InstanceTable row appends.
#include "read/instances.h"

#include <cctype>
#include <string>

namespace truffld::diagnose {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool IsPointToPoint(std::string_view family) {
  const std::string f = Lower(family);
  return f.find("send") != std::string::npos || f.find("recv") != std::string::npos;
}

bool IsSendFamily(std::string_view family) {
  const std::string f = Lower(family);
  return f.find("send") != std::string::npos && f.find("recv") == std::string::npos;
}

std::map<std::pair<int64_t, int64_t>, uint32_t> VerticalUnits(const InstanceTable& t) {
  std::map<std::pair<int64_t, int64_t>, uint32_t> vertical;
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    if (t.steps[u].view != View::kHorizontal) vertical[{t.steps[u].rank.value_or(-1), t.steps[u].step_index}] = u;
  }
  return vertical;
}

int64_t BetweenStepsInstance(const InstanceTable& t, uint32_t u) {
  if (t.detail.size() != t.size()) return -1;
  const StepInfo& s = t.steps[u];
  for (uint32_t i = s.first_instance; i < s.first_instance + s.instance_count; ++i) {
    if ((t.detail[i].flags & kDetailOutside) && t.strings.Get(t.family[i]) == kBetweenStepsFamily) return i;
  }
  return -1;
}

const char* FeatureName(int f) noexcept {
  static constexpr const char* kNames[kNumFeatures] = {
      "duration_ns",     "self_time_ns",   "runtime_time_ns", "runtime_count",
      "driver_time_ns",  "driver_count",   "kernel_count",    "kernel_time_ns",
      "bytes_moved",     "stream_overlap", "launch_latency_ns", "comm_bytes",
      "world_size",      "phase_code"};
  return (f >= 0 && f < kNumFeatures) ? kNames[f] : "unknown";
}

double PhaseCode(const std::string& phase) noexcept {
  if (phase == "decode") return 1;
  if (phase == "prefill") return 2;
  if (phase == "mixed") return 3;
  return 0;
}

bool IsCodeLoadCall(std::string_view api) noexcept {
  for (std::string_view prefix : {"cuModuleLoad", "cuLibraryLoad", "cudaLibraryLoad", "cuLinkComplete"}) {
    if (api.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

uint32_t StringTable::Intern(std::string_view s) {
  const uint32_t id = pool_.Intern(s) - 1;  // pool ids start at 1 (0 is its "no string")
  if (id == strings_.size()) strings_.emplace_back(s);
  return id;
}

uint32_t InstanceTable::Add(uint32_t family_id, uint32_t layer_id, uint32_t parent_id,
                            int64_t start, int64_t end, const FeatureVector& f) {
  uint32_t idx = static_cast<uint32_t>(family.size());
  step.push_back(steps.empty() ? 0 : static_cast<uint32_t>(steps.size() - 1));
  family.push_back(family_id);
  layer.push_back(layer_id);
  parent.push_back(parent_id);
  start_ns.push_back(start);
  end_ns.push_back(end);
  features.push_back(f);
  if (!steps.empty()) steps.back().instance_count = idx + 1 - steps.back().first_instance;
  return idx;
}

void InstanceTable::Reserve(size_t n) {
  for (auto* v : {&step, &family, &layer, &parent}) v->reserve(n);
  start_ns.reserve(n);
  end_ns.reserve(n);
  features.reserve(n);
  kernels.reserve(n);
  api_calls.reserve(n);
  detail.reserve(n);
}

StepKey KeyOf(const StepInfo& s) {
  return StepKey{s.rank.value_or(-1), s.step_index, s.view == View::kHorizontal};
}

}  // namespace truffld::diagnose
