// Hand-built inputs for the unit tests of the merge passes (merge/core): a TraceFile assembled
// event by event, and host ranges written out directly, so each pass is tested on exactly the
// input its rule talks about, without an importer or the passes before it.
#pragma once

#include <string>
#include <vector>

#include "core/host_ranges.h"
#include "truffld/merge/event.h"

namespace truffld::merge::testing {

class FileBuilder {
 public:
  FileBuilder() { f_.meta.path = "hand.jsonl"; }
  // Appends an event (line = its index + 1); returns its index.
  uint32_t Add(EventKind kind, TimeNs start, TimeNs end, int64_t pid, int64_t tid, const std::string& name = "",
               int64_t corr = kNone, const EventExtra& x = {}) {
    Event e;
    e.kind = kind;
    e.start = start;
    e.end = end;
    e.name = name.empty() ? kNoStr : f_.strings.Intern(name);
    f_.SetThread(e, pid, tid);
    f_.SetCorrelation(e, corr);
    f_.SetExtra(e, x);
    f_.AddEvent(e, f_.events.size() + 1);
    return uint32_t(f_.events.size() - 1);
  }
  uint32_t Range(TimeNs s, TimeNs e, int64_t pid, int64_t tid, const std::string& name) {
    return Add(EventKind::kRange, s, e, pid, tid, name);
  }
  uint32_t Call(TimeNs s, TimeNs e, int64_t pid, int64_t tid, int64_t corr, const std::string& name = "cudaLaunchKernel",
                EventKind kind = EventKind::kRuntime) {
    return Add(kind, s, e, pid, tid, name, corr);
  }
  uint32_t Kernel(TimeNs s, TimeNs e, int64_t corr, int64_t pid = kNone, int64_t graph_node = kNone) {
    EventExtra x;
    x.graph_node_id = graph_node;
    return Add(EventKind::kKernel, s, e, pid, kNone, "k", corr, x);
  }
  // The file with its thread table in (process, thread) order, as importers leave it.
  TraceFile Finish() {
    f_.SortThreads();
    return std::move(f_);
  }

 private:
  TraceFile f_;
};

// The host range of complete-range event i.
inline HostRange RangeOf(const TraceFile& f, uint32_t i) {
  const Event& e = f.events[i];
  return {e.start, e.end, e.thread, i};
}

// Every complete-range event of f as a host range, in file order (what pass 1 yields for them).
inline std::vector<HostRange> RangesOf(const TraceFile& f) {
  std::vector<HostRange> out;
  for (uint32_t i = 0; i < f.events.size(); ++i)
    if (f.events[i].kind == EventKind::kRange) out.push_back(RangeOf(f, i));
  return out;
}

}  // namespace truffld::merge::testing
