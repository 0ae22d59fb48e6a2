#include "truffld/merge/event.h"

#include <algorithm>
#include <cstring>

namespace truffld::merge {

const char* EventKindName(EventKind k) noexcept {
  // The record types' contract spelling (truffld/wire.h; its literals end in '\0'), and two
  // kinds no record type names: Kineto/nsys complete ranges and folded push/pop pairs.
  auto wire = [](RecordType t) { return RecordTypeName(t).data(); };
  switch (k) {
    case EventKind::kNvtxPush: return wire(RecordType::kNvtxPush);
    case EventKind::kNvtxPop: return wire(RecordType::kNvtxPop);
    case EventKind::kNvtxStart: return wire(RecordType::kNvtxStart);
    case EventKind::kNvtxEnd: return wire(RecordType::kNvtxEnd);
    case EventKind::kNvtxMark: return wire(RecordType::kNvtxMark);
    case EventKind::kRange: return "RANGE";
    case EventKind::kRuntime: return wire(RecordType::kRuntime);
    case EventKind::kDriver: return wire(RecordType::kDriver);
    case EventKind::kKernel: return wire(RecordType::kKernel);
    case EventKind::kMemcpy: return wire(RecordType::kMemcpy);
    case EventKind::kMemset: return wire(RecordType::kMemset);
    case EventKind::kSync: return wire(RecordType::kSync);
    case EventKind::kGraphNode: return wire(RecordType::kGraphNode);
    case EventKind::kNvtxRange: return "NVTX_RANGE";  // internal: a folded NVTX_PUSH + NVTX_POP
  }
  return "?";
}

const char* IngestStats::Name(Key k) noexcept {
  return k.id >= kKeptBase ? EventKindName(EventKind(k.id - kKeptBase)) : ProblemKey(Problem(k.id));
}

void IngestStats::Report(std::string where, Problem kind, std::string message) {
  size_t kept = 0;
  for (const IngestIssue& i : issues) kept += i.kind == kind;
  Add(kind);
  if (kept < kMaxIssuesKept) issues.push_back({std::move(where), kind, std::move(message)});
}

namespace {

// Hash of every field of x, read as the record's twelve words (HashBytes over its bytes cost
// more than the table lookup itself).
uint64_t HashExtra(const EventExtra& x) {
  uint64_t w[sizeof(EventExtra) / 8];  // the record has no padding (event.h): its words are its fields
  std::memcpy(w, &x, sizeof w);
  return HashWords(w, std::size(w), ProcessHashSeed());
}

uint64_t HashThread(const HostThread& t) {
  const uint64_t w[] = {uint64_t(t.process_id), uint64_t(t.thread_id)};
  return HashWords(w, std::size(w), ProcessHashSeed());
}

}  // namespace

uint32_t ThreadTable::Lookup(const HostThread& t) {
  const uint32_t n = static_cast<uint32_t>(list_.size());
  auto eq = [&](uint32_t k) { return list_[k] == t; };
  auto hash_of = [&](uint32_t k) { return HashThread(list_[k]); };
  if (n >= capacity_) {  // full: known pairs are still found, new ones are counted
    const uint32_t i = index_.Find(HashThread(t), n, eq, hash_of);
    if (i == n) ++overflowed_;
    return i == n ? 0 : i;
  }
  const uint32_t i = index_.FindOrInsert(HashThread(t), n, eq, hash_of);
  if (i == n) {
    if (sorted_ && !(list_.back() < t)) sorted_ = false;
    list_.push_back(t);
  }
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
  index_.Reset(0);  // every index moved: rebuilt by the next Lookup
  last_ = before_last_ = 0;
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
  const uint32_t n = static_cast<uint32_t>(extras->size());
  for (uint32_t r : recent_)
    if (r < n && (*extras)[r] == x) return r;
  const uint32_t i = index_.FindOrInsert(
      HashExtra(x), n, [&](uint32_t k) { return (*extras)[k] == x; },
      [&](uint32_t k) { return HashExtra((*extras)[k]); });
  if (i == n) extras->push_back(x);
  recent_[next_recent_++ % std::size(recent_)] = i;
  return i;
}

}  // namespace truffld::merge
