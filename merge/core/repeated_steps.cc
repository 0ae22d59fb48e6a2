// Steps from a repeated top-level call (see repeated_steps.h).
#include "core/repeated_steps.h"

#include <algorithm>
#include <unordered_map>

namespace truffld::merge {
namespace {

// One (thread, name) group of outermost ranges.
struct Group {
  uint32_t count = 0;
  TimeNs total = 0;
  TimeNs last_end = INT64_MIN;  // of the latest counted occurrence
};

uint64_t GroupKey(uint32_t thread, StrId name) { return (uint64_t(thread) << 32) | name; }

// Module forwards and user annotations can be steps; operators, collectives and the Python
// frames of a profiler's stack (category python_function: any function, e.g. dynamo's `_fn`
// during CUDA-graph capture) cannot.
bool Eligible(const TraceFile& file, Layer layer, const ClassKey& key) {
  if (file.strings.Get(key.name).substr(0, 10) == "nn.Module:") return layer == Layer::kFrontend;
  const std::string_view category = file.strings.Get(key.category);
  return layer == Layer::kOther && category != "python_function" && category != "gpu_user_annotation";
}

// An occurrence counts when it does not overlap the group's previous one (outermost ranges of
// a thread nest in none, but a clamped or damaged trace may still overlap them).
bool CountOccurrence(Group* g, const HostRange& h) {
  if (h.start < g->last_end) return false;
  ++g->count;
  g->total += h.end - h.start;
  g->last_end = h.end;
  return true;
}

struct Best {
  uint64_t key = 0;
  TimeNs total = -1;
};

}  // namespace

RepeatedCallSteps FindRepeatedCallSteps(const TraceFile& file, const std::vector<HostRange>& ranges,
                                        const RangeLayers& layers, const Nesting& nesting) {
  RepeatedCallSteps out;
  if (layers.implicit.empty()) return out;
  std::unordered_map<uint64_t, Group> groups;
  std::unordered_map<uint64_t, bool> eligible;  // by (name, category)
  std::unordered_map<uint32_t, TimeNs> outer;   // per thread: time in its outermost ranges
  for (uint32_t r : nesting.order) {
    const HostRange& h = ranges[r];
    const uint32_t p = nesting.parent[r];
    if (p == kNoRange || !nesting.IsImplicit(p)) continue;  // not outermost on its thread
    outer[h.thread] += h.end - h.start;
    const ClassKey key = ClassKeyOf(file, file.events[h.event]);
    auto [it, fresh] = eligible.emplace((uint64_t(key.name) << 32) | key.category, false);
    if (fresh) it->second = Eligible(file, nesting.layer[r], key);
    if (it->second) CountOccurrence(&groups[GroupKey(h.thread, key.name)], h);
  }
  std::unordered_map<int64_t, Best> best;  // per process
  for (const auto& [key, g] : groups) {
    if (g.count < RepeatedCallSteps::kMinRepeats) continue;  // a once-called main() never wins
    const uint32_t thread = uint32_t(key >> 32);
    Best& b = best[file.threads[thread].process_id];
    if (g.total > b.total || (g.total == b.total && key < b.key)) b = {key, g.total};
  }
  std::unordered_map<uint64_t, Group> chosen;
  for (const auto& [process, b] : best) {
    const uint32_t thread = uint32_t(b.key >> 32);
    if (double(b.total) < RepeatedCallSteps::kMinShare * double(outer[thread])) continue;
    chosen.emplace(b.key, Group());
    out.processes.push_back(process);
  }
  if (chosen.empty()) return out;
  for (uint32_t r : nesting.order) {
    const HostRange& h = ranges[r];
    const uint32_t p = nesting.parent[r];
    if (p == kNoRange || !nesting.IsImplicit(p)) continue;
    auto it = chosen.find(GroupKey(h.thread, file.events[h.event].name));
    if (it != chosen.end() && CountOccurrence(&it->second, h)) out.ranges.push_back(r);
  }
  std::sort(out.ranges.begin(), out.ranges.end());
  std::sort(out.processes.begin(), out.processes.end());
  return out;
}

void ApplyRepeatedCallSteps(const RepeatedCallSteps& found, RangeLayers* layers) {
  for (uint32_t r : found.ranges) layers->layer[r] = Layer::kStep;
  auto& implicit = layers->implicit;
  implicit.erase(std::remove_if(implicit.begin(), implicit.end(),
                                [&](const ImplicitStep& s) {
                                  return std::binary_search(found.processes.begin(), found.processes.end(),
                                                            s.process);
                                }),
                 implicit.end());
}

}  // namespace truffld::merge
