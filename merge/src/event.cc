#include "truffld/merge/event.h"

#include <algorithm>
#include <cstring>

namespace truffld::merge {

const char* EventKindName(EventKind k) noexcept {
  switch (k) {
    case EventKind::kNvtxPush: return "NVTX_PUSH";
    case EventKind::kNvtxPop: return "NVTX_POP";
    case EventKind::kNvtxStart: return "NVTX_START";
    case EventKind::kNvtxEnd: return "NVTX_END";
    case EventKind::kNvtxMark: return "NVTX_MARK";
    case EventKind::kRange: return "RANGE";
    case EventKind::kRuntime: return "RUNTIME";
    case EventKind::kDriver: return "DRIVER";
    case EventKind::kKernel: return "KERNEL";
    case EventKind::kMemcpy: return "MEMCPY";
    case EventKind::kMemset: return "MEMSET";
    case EventKind::kSync: return "SYNC";
    case EventKind::kGraphNode: return "GRAPH_NODE";
  }
  return "?";
}

void IngestStats::Add(std::string_view key, uint64_t n) {
  for (auto& [k, v] : counts) {
    if (k == key) {
      v += n;
      return;
    }
  }
  counts.emplace_back(std::string(key), n);
}

uint64_t IngestStats::Get(std::string_view key) const {
  for (auto& [k, v] : counts)
    if (k == key) return v;
  return 0;
}

void IngestStats::Report(std::string where, std::string kind, std::string message) {
  size_t kept = 0;
  for (auto& i : issues) kept += i.kind == kind;
  Add(kind);
  if (kept < kMaxIssuesKept) issues.push_back({std::move(where), std::move(kind), std::move(message)});
}

namespace {

// Hash of every field of x (not its padding bytes).
uint64_t HashExtra(const EventExtra& x) {
  char buf[76];
  char* p = buf;
  auto put = [&p](const void* v, size_t n) { std::memcpy(p, v, n); p += n; };
  put(&x.range_id, 8); put(&x.graph_id, 8); put(&x.graph_node_id, 8);
  put(&x.original_graph_node_id, 8); put(&x.bytes, 8); put(x.grid, 12); put(x.block, 12);
  put(&x.copy_kind, 4); put(&x.payload, 4); put(&x.return_code, 4);
  return HashBytes(std::string_view(buf, size_t(p - buf)), 0x9e3779b97f4a7c15ull);
}

}  // namespace

uint32_t ThreadTable::Lookup(const HostThread& t) {
  auto hash = [](const HostThread& h) {
    return (uint64_t(h.process_id) * 0x9E3779B97F4A7C15ull ^ uint64_t(h.thread_id)) * 0xBF58476D1CE4E5B9ull >> 20;
  };
  if (list_.size() * 2 >= slots_.size()) {  // (re)build: first use, growth, after Sort
    size_t want = 64;
    while (want <= list_.size() * 2) want *= 2;
    slots_.assign(want, 0);
    const size_t mask = slots_.size() - 1;
    for (uint32_t i = 0; i < list_.size(); ++i) {
      size_t k = hash(list_[i]) & mask;
      while (slots_[k] != 0) k = (k + 1) & mask;
      slots_[k] = i + 1;
    }
  }
  const size_t mask = slots_.size() - 1;
  size_t k = hash(t) & mask;
  for (; slots_[k] != 0; k = (k + 1) & mask)
    if (list_[slots_[k] - 1] == t) return slots_[k] - 1;
  const uint32_t i = static_cast<uint32_t>(list_.size());
  if (sorted_ && !(list_.back() < t)) sorted_ = false;
  list_.push_back(t);
  slots_[k] = i + 1;
  return i;
}

std::vector<uint32_t> ThreadTable::Sort() {
  if (sorted_) return {};
  std::vector<uint32_t> order(list_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return list_[a] < list_[b]; });
  std::vector<uint32_t> remap(list_.size());
  std::vector<HostThread> sorted(list_.size());
  for (uint32_t r = 0; r < order.size(); ++r) {
    remap[order[r]] = r;
    sorted[r] = list_[order[r]];
  }
  list_ = std::move(sorted);
  slots_.clear();  // rebuilt by the next Lookup
  last_ = 0;
  sorted_ = true;
  return remap;
}

std::vector<uint32_t> TraceFile::SortThreads() {
  std::vector<uint32_t> remap = threads.Sort();
  if (!remap.empty())
    for (Event& e : events) e.thread = remap[e.thread];
  return remap;
}

uint32_t ExtraInterner::Intern(const EventExtra& x, std::vector<EventExtra>* extras) {
  if ((used_ + 1) * 2 > slots_.size()) Grow(*extras);
  const size_t mask = slots_.size() - 1;
  for (size_t i = HashExtra(x) & mask;; i = (i + 1) & mask) {
    const uint32_t s = slots_[i];
    if (s == 0) {
      slots_[i] = static_cast<uint32_t>(extras->size()) + 1;
      ++used_;
      extras->push_back(x);
      return slots_[i] - 1;
    }
    if ((*extras)[s - 1] == x) return s - 1;
  }
}

void ExtraInterner::Grow(const std::vector<EventExtra>& extras) {
  std::vector<uint32_t> old;
  old.swap(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, 0);
  const size_t mask = slots_.size() - 1;
  for (uint32_t s : old) {
    if (s == 0) continue;
    size_t i = HashExtra(extras[s - 1]) & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

}  // namespace truffld::merge
