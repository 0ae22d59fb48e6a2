// Choosing and annotating truffld-merge's trace.json for truffld-diagnose (see trace_output.h).
#include "trace_output.h"

#include <sys/stat.h>

#include <filesystem>

#include "truffld/byte_source.h"
#include "report/trace_annotate.h"
#include "report/stats_table.h"
#include "report/trace_overlay.h"

namespace truffld::diagnose {
namespace {

constexpr size_t kHeadBytes = 4096;  // truffld-merge's first line is about 150 bytes

// The first line of `path` (decompressed), read from at most kHeadBytes.
Result<std::string> HeadLine(const std::string& path) {
  auto src = OpenByteSource(path);
  if (!src.ok()) return src.status();
  std::string head(kHeadBytes, '\0');
  size_t got = 0;
  while (got < head.size()) {
    auto r = (*src)->Read(head.data() + got, head.size() - got);
    if (!r.ok()) return r.status();
    if (*r == 0) break;
    got += *r;
  }
  head.resize(got);
  const size_t nl = head.find('\n');
  if (nl == std::string::npos) {
    return ParseError(path + ": no line break in its first " + std::to_string(got) +
                      " bytes: not a trace.json written by truffld-merge");
  }
  head.resize(nl);
  return head;
}

}  // namespace

Result<TraceChoice> ChooseTrace(const std::string& input, const std::string& trace_flag, bool no_trace) {
  namespace fs = std::filesystem;
  TraceChoice c;
  if (no_trace) return c;
  c.named = !trace_flag.empty();
  std::error_code ec;
  const fs::path in(input);
  const std::string path = c.named                  ? trace_flag
                           : fs::is_directory(in, ec) ? (in / "trace.json").string()
                                                    : (in.parent_path() / "trace.json").string();
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (c.named) return NotFound(path + ": cannot read the trace to annotate (--trace)");
    c.why_none = "no " + path + " (truffld-merge --no-trace-json?); diagnosis.trace.json not written";
    return c;
  }
  if (!S_ISREG(st.st_mode)) {
    // It is read twice: once here, once to copy it.
    if (c.named) return InvalidArgument(path + ": --trace must name a regular file (not a pipe or a folder)");
    c.why_none = path + " is not a regular file; diagnosis.trace.json not written";
    return c;
  }
  Result<int64_t> origin = [&]() -> Result<int64_t> {
    auto head = HeadLine(path);
    if (!head.ok()) return head.status();
    auto o = TraceTimeOrigin(*head);
    if (!o.ok()) return ParseError(path + ": " + o.status().message());
    return o;
  }();
  if (!origin.ok()) {
    if (c.named) return origin.status();
    c.why_none = origin.status().message() + "; diagnosis.trace.json not written";
    return c;
  }
  c.path = path;
  c.time_origin_ns = *origin;
  return c;
}

Status AddAnnotatedTrace(const TraceChoice& trace, const std::vector<StepDiagnosis>& diagnoses,
                         const InstanceTable& table, const std::string& out_path, OutputSet* out,
                         nlohmann::json* stats, std::vector<std::string>* warnings, bool* input_side) {
  *input_side = false;
  if (trace.path.empty()) {
    out->RemoveAtCommit(out_path);
    return Status::Ok();
  }
  const TraceOverlay overlay = BuildTraceOverlay(diagnoses, table);
  AnnotateStats ts;
  const Status written = out->AddWith(out_path, [&](const std::string& p) { return AnnotateTrace(trace.path, overlay, p, &ts); });
  nlohmann::json& j = (*stats)["trace"];
  if (!written.ok()) {
    const std::string why = written.message();
    j = TraceStatsJson(trace.path, overlay, ts, &why);
    if (trace.named) {
      *input_side = ts.input_error;
      return written;
    }
    // Found beside the trees, not asked for: drop it (and an earlier run's), keep the rest.
    out->RemoveAtCommit(out_path);
    warnings->push_back("diagnosis.trace.json not written: " + written.message());
    return Status::Ok();
  }
  j = TraceStatsJson(trace.path, overlay, ts, nullptr);
  const uint64_t linkable = overlay.markers - ts.markers_replayed - ts.markers_outside;
  if (linkable > 0 && ts.flows == 0) {
    warnings->push_back("diagnosis.trace.json: none of the " + std::to_string(linkable) +
                        " faulty-operator markers found its operator slice in " + trace.path +
                        " (a trace from another merge, or from an older truffld-merge?)");
  }
  if (!overlay.steps.empty() && ts.steps_annotated == 0) {
    warnings->push_back("diagnosis.trace.json: no step slice of " + trace.path +
                        " matched a diagnosed step: verdicts are only on the diagnosis track");
  }
  return Status::Ok();
}

}  // namespace truffld::diagnose
