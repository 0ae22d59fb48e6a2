// Helpers shared by the merge unit tests: build a TraceFile from raw JSONL text in memory.
#pragma once

#include <sstream>
#include <string>

#include "truffld/merge/event.h"
#include "truffld/merge/raw_parser.h"

namespace truffld::merge::testing {

// `fast_path`: false reads every line with the DOM parser (RawLineParser::set_fast_path).
inline TraceFile FileFromLines(const std::string& text, const std::string& name = "mem.jsonl",
                               bool fast_path = true) {
  TraceFile f;
  f.meta.path = name;
  RawLineParser p(&f, name);
  p.set_fast_path(fast_path);
  std::istringstream in(text);
  std::string line;
  uint64_t n = 0;
  while (std::getline(in, line)) p.ParseLine(line, ++n);
  p.Finish();
  if (f.meta.format.empty()) f.meta.format = "truffld";
  f.SortThreads();  // as every importer does last
  return f;
}

// Raw dump lines of process 7, thread 7 (times in ns): a record, an NVTX push and pop (`extra`:
// more members, e.g. a domain or payload), a cudaLaunchKernel call lasting 5 ns, and a kernel on
// device 0, stream 7 linked to its launch by correlation id.
inline std::string RawRec(const std::string& body) { return "{" + body + ",\"process_id\":7,\"thread_id\":7}\n"; }
inline std::string RawPush(const std::string& name, long long t, const std::string& extra = "") {
  return RawRec("\"type\":\"NVTX_PUSH\",\"name\":\"" + name + "\",\"timestamp\":" + std::to_string(t) + extra);
}
inline std::string RawPop(long long t, const std::string& extra = "") {
  return RawRec("\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(t) + extra);
}
inline std::string RawLaunch(long long s, long long corr) {
  return RawRec("\"type\":\"RUNTIME\",\"cbid\":211,\"name\":\"cudaLaunchKernel_v7000\",\"start\":" +
                std::to_string(s) + ",\"end\":" + std::to_string(s + 5) + ",\"correlation_id\":" + std::to_string(corr));
}
inline std::string RawKernel(const std::string& name, long long s, long long e, long long corr) {
  return "{\"type\":\"KERNEL\",\"name\":\"" + name + "\",\"gpu_start\":" + std::to_string(s) + ",\"gpu_end\":" +
         std::to_string(e) + ",\"correlation_id\":" + std::to_string(corr) + ",\"device\":0,\"stream\":7}\n";
}

}  // namespace truffld::merge::testing
