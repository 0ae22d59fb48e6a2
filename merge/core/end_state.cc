// Pass 6b, end state (end_state.h).
#include "core/end_state.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "truffld/merge/classify.h"

namespace truffld::merge {
namespace {

// The payload of comm range `r`: its NVTX payload, else one made from a pynccl-style name.
std::string PayloadOf(const TraceFile& f, const Event& e) {
  const StrId p = f.Extra(e).payload;
  if (p != kNoStr) return std::string(f.strings.Get(p));
  return CommPayloadFromName(f.strings.Get(e.name));
}

int64_t IntField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return kNone;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    return end && *end == '\0' && !s.empty() ? int64_t(v) : kNone;
  }
  return kNone;
}

bool IsLaunch(std::string_view n) {
  auto has = [n](std::string_view w) { return n.find(w) != std::string_view::npos; };
  return has("Launch") || ((has("Memcpy") || has("Memset")) && has("Async"));
}

// The collectives of the file in start order: comm ranges naming a communicator, and outermost
// comm ranges with none inside.
std::vector<uint32_t> Collectives(const TraceFile& f, const std::vector<HostRange>& ranges, const Nesting& n,
                                  std::vector<std::string>* comm) {
  comm->assign(ranges.size(), {});
  std::vector<uint32_t> out;
  uint32_t outer = kNoRange;  // the open outermost comm range
  bool outer_has_id = false;
  auto close_outer = [&] {
    if (outer != kNoRange && !outer_has_id) out.push_back(outer);
    outer = kNoRange;
  };
  for (uint32_t r : n.order) {
    if (n.layer[r] != Layer::kComm) continue;
    const HostRange& h = ranges[r];
    if (outer != kNoRange && (ranges[outer].thread != h.thread || h.start >= ranges[outer].end)) close_outer();
    std::string id = CommunicatorOf(PayloadOf(f, f.events[h.event]));
    if (outer == kNoRange) { outer = r; outer_has_id = false; }
    if (!id.empty()) {
      (*comm)[r] = std::move(id);
      out.push_back(r);
      outer_has_id = true;
    }
  }
  close_outer();
  std::sort(out.begin(), out.end(), [&](uint32_t a, uint32_t b) {
    return ranges[a].start != ranges[b].start ? ranges[a].start < ranges[b].start : a < b;
  });
  return out;
}

void AddCollectives(const TraceFile& f, const ClockMap& clock, const std::vector<HostRange>& ranges,
                    const Nesting& n, const std::vector<bool>& open, FileEndState* out) {
  std::vector<std::string> comm;
  const std::vector<uint32_t> coll = Collectives(f, ranges, n, &comm);
  std::unordered_map<std::string, size_t> slot;
  std::vector<uint32_t> last;
  for (uint32_t r : coll) {
    const Event& e = f.events[ranges[r].event];
    const std::string family = NormaliseFamily(Layer::kComm, f.strings.Get(e.name));
    const std::string key = comm[r].empty() ? "op:" + family : comm[r];
    auto [it, fresh] = slot.emplace(key, out->collectives.size());
    if (fresh) {
      out->collectives.push_back({key, {}, 0, kNone, kNone, 0, 0, false});
      last.push_back(r);
    }
    CollectiveProgress& c = out->collectives[it->second];
    ++c.entered;
    c.op = family;
    last[it->second] = r;
  }
  for (size_t i = 0; i < last.size(); ++i) {
    const HostRange& h = ranges[last[i]];
    CollectiveProgress& c = out->collectives[i];
    const nlohmann::json j = nlohmann::json::parse(PayloadOf(f, f.events[h.event]), nullptr, false);
    if (j.is_object()) {
      c.bytes = IntField(j, "bytes");
      c.world_size = IntField(j, "world_size");
    }
    c.last_start = clock.Map(h.start);
    c.last_end = clock.Map(h.end);
    c.last_open = open[last[i]];
  }
}

// `last_device_start`: the latest device op start on the file's clock.
void AddPendingLaunches(const TraceFile& f, const ClockMap& clock, const DeviceLinks& links, TimeNs last_device_start,
                        FileEndState* out) {
  std::unordered_set<int64_t> done;
  for (const auto& [call, op] : links.links) done.insert(f.Correlation(f.events[op]));
  for (const Event& e : f.events) {
    if ((e.kind != EventKind::kRuntime && e.kind != EventKind::kDriver) || e.start < last_device_start) continue;
    const std::string_view name = f.strings.Get(e.name);
    if (!IsLaunch(name) || done.count(f.Correlation(e))) continue;
    done.insert(f.Correlation(e));  // a runtime call and the driver call inside it count once
    ++out->pending_launches;
    out->first_pending.push_back({NormaliseFamily(e.kind == EventKind::kRuntime ? Layer::kRuntime : Layer::kDriver, name),
                                  clock.Map(e.start), f.ThreadIdOf(e), f.Extra(e).stream});
  }
  auto& p = out->first_pending;
  std::sort(p.begin(), p.end(), [](const PendingLaunch& a, const PendingLaunch& b) { return a.start < b.start; });
  if (p.size() > FileEndState::kMaxPendingListed) p.resize(FileEndState::kMaxPendingListed);
}

}  // namespace

std::string CommunicatorOf(std::string_view payload) {
  if (payload.find("\"comm\"") == std::string_view::npos) return {};
  const nlohmann::json j = nlohmann::json::parse(payload, nullptr, false);
  if (!j.is_object()) return {};
  auto it = j.find("comm");
  if (it == j.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  return {};
}

FileEndState EndStateOf(const TraceFile& file, const ClockMap& clock, const std::vector<HostRange>& ranges,
                        const std::vector<uint32_t>& open_at_end, const Nesting& nesting, const DeviceLinks& links) {
  FileEndState out;
  out.stats_record = !file.meta.stats_json.empty();
  out.truncated_last_line = file.stats.Get(Problem::kTruncatedLastLine) > 0;
  const bool raw_dump = file.meta.has_meta && file.meta.format == "truffld";
  out.clean_exit = !out.truncated_last_line && (out.stats_record || !raw_dump);
  // One pass on the file's clock (ClockMap::Map is increasing, so the latest maps to the latest):
  // the last event, and the last device op's start and end.
  TimeNs last_event = 0, last_device_start = 0, last_device_end = 0;
  bool any_event = false, any_device = false;
  for (const Event& e : file.events) {
    last_event = any_event ? std::max({last_event, e.start, e.end}) : std::max(e.start, e.end);
    any_event = true;
    if (e.kind != EventKind::kKernel && e.kind != EventKind::kMemcpy && e.kind != EventKind::kMemset) continue;
    last_device_start = any_device ? std::max(last_device_start, e.start) : e.start;
    last_device_end = any_device ? std::max(last_device_end, e.end) : e.end;
    any_device = true;
  }
  if (any_event) out.last_event = clock.Map(last_event);
  if (any_device) out.last_device_end = clock.Map(last_device_end);
  out.last_alive = out.last_event;
  for (const auto& [realtime, monotonic] : file.meta.clock_sync)
    out.last_alive = std::max(out.last_alive, clock.Map(file.meta.clock == ClockId::kRealtime ? realtime : monotonic));
  std::vector<bool> open(ranges.size(), false);
  std::vector<uint32_t> frames(open_at_end);
  for (uint32_t r : frames) open[r] = true;
  std::sort(frames.begin(), frames.end(), [&](uint32_t a, uint32_t b) { return NestingLess(ranges[a], ranges[b]); });
  if (frames.size() > FileEndState::kMaxOpenListed) frames.resize(FileEndState::kMaxOpenListed);
  for (uint32_t r : frames) {
    const Event& e = file.events[ranges[r].event];
    const Layer layer = r < nesting.layer.size() ? nesting.layer[r] : Layer::kOther;
    out.open.push_back({std::string(file.strings.Get(e.name).substr(0, 200)), layer, clock.Map(ranges[r].start),
                        file.ThreadIdOf(e)});
  }
  uint32_t last_step = kNoRange;
  for (uint32_t r = 0; r < nesting.real_ranges && r < ranges.size(); ++r) {
    if (nesting.layer[r] != Layer::kStep) continue;
    ++out.steps_entered;
    if (last_step == kNoRange || ranges[r].start > ranges[last_step].start) last_step = r;
  }
  if (last_step != kNoRange) {
    out.last_step = std::string(file.strings.Get(file.events[ranges[last_step].event].name).substr(0, 200));
    out.last_step_start = clock.Map(ranges[last_step].start);
    out.last_step_open = open[last_step];
  }
  AddCollectives(file, clock, ranges, nesting, open, &out);
  if (any_device) AddPendingLaunches(file, clock, links, last_device_start, &out);
  return out;
}

}  // namespace truffld::merge
