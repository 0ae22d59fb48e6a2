// Pure mapping helpers of the Nsight Systems importer (see import_nsys_map.h).
#include "importers/nsys/nsys_map.h"

#include "importers/main_process.h"

#include <algorithm>
#include <charconv>
#include <tuple>
#include <vector>

namespace truffld::merge::nsys {

std::string_view CopyKindName(int64_t k) {
  switch (k) {
    case 1: return "HtoD";
    case 2: return "DtoH";
    case 3: return "HtoA";
    case 4: return "AtoH";
    case 5: return "AtoA";
    case 6: return "AtoD";
    case 7: return "DtoA";
    case 8: return "DtoD";
    case 9: return "HtoH";
    case 10: return "PtoP";
    case 11: return "UvmHtoD";
    case 12: return "UvmDtoH";
    case 13: return "UvmDtoD";
    default: return {};
  }
}

NvtxRow ClassifyNvtxRow(int64_t t) {
  switch (t) {
    case 59: return NvtxRow::kPushPop;
    case 60: return NvtxRow::kStartEnd;
    case 34: return NvtxRow::kMark;
    case 75: return NvtxRow::kDomainCreate;
    default: return NvtxRow::kOther;
  }
}

Problem NvtxSkipKey(int64_t t) {
  switch (t) {
    case 33: return Problem::kNsysSkippedNvtxCategory;
    case 39: return Problem::kNsysSkippedNvtxThreadName;
    case 75: return Problem::kNsysSkippedNvtxDomainCreate;
    case 76: return Problem::kNsysSkippedNvtxDomainDestroy;
    default: return Problem::kNsysSkippedNvtxOther;
  }
}

std::optional<int64_t> MpiRankFromThreadName(std::string_view text) {
  constexpr std::string_view kPrefix = "MPI Rank ";
  if (text.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  text.remove_prefix(kPrefix.size());
  int64_t r = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), r);
  if (ec != std::errc() || p != text.data() + text.size() || r < 0) return std::nullopt;
  return r;
}

size_t DropNestedApiAliases(TraceFile* tf) {
  std::vector<uint32_t> api;
  for (uint32_t i = 0; i < tf->events.size(); ++i)
    if (IsApiKind(tf->events[i].kind) && tf->Correlation(tf->events[i]) != kNone) api.push_back(i);
  auto key = [&](uint32_t i) {
    const Event& e = tf->events[i];
    return std::make_tuple(tf->threads[e.thread], tf->Correlation(e), e.start, -e.end, i);
  };
  std::sort(api.begin(), api.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  std::vector<bool> drop(tf->events.size(), false);
  size_t dropped = 0;
  for (size_t j = 1; j < api.size(); ++j) {
    const Event& outer = tf->events[api[j - 1]];
    const Event& inner = tf->events[api[j]];
    if (inner.thread == outer.thread &&
        tf->Correlation(inner) == tf->Correlation(outer) && inner.end <= outer.end) {
      drop[api[j]] = true;
      ++dropped;
      std::swap(api[j], api[j - 1]);  // keep comparing against the outermost call
    }
  }
  if (dropped) {
    tf->KeepEvents([&](size_t i) { return !drop[i]; });
    tf->stats.Add(Problem::kNsysSkippedNestedApiAlias, dropped);
  }
  return dropped;
}

void FinishFile(TraceFile* tf, std::optional<int64_t> session_start,
                const std::unordered_map<int64_t, int64_t>& mpi_rank) {
  DropNestedApiAliases(tf);
  if (session_start) {
    for (Event& e : tf->events) {
      if (__builtin_add_overflow(e.start, *session_start, &e.start) ||
          __builtin_add_overflow(e.end, *session_start, &e.end))
        tf->stats.Report(tf->meta.path, Problem::kNsysBadTime,
                         "session start + event time overflows int64 ns");
    }
  } else {
    tf->stats.Add(Problem::kNsysRelativeTimes);
  }
  const int64_t main_pid = AssignDeviceProcesses(tf);
  if (auto it = mpi_rank.find(main_pid); it != mpi_rank.end()) tf->meta.rank = it->second;
  uint64_t kept[16] = {};
  for (const Event& e : tf->events) ++kept[static_cast<int>(e.kind) & 15];
  for (int k = 0; k < 16; ++k)
    if (kept[k]) tf->stats.AddKept(static_cast<EventKind>(k), kept[k]);
}

}  // namespace truffld::merge::nsys
