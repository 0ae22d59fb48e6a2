#include "truffld/merge/event.h"

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

}  // namespace truffld::merge
