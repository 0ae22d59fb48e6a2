// summary.json (schemas/summary.schema.json) and the short stdout summary.
#include <nlohmann/json.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "truffld/merge/writers.h"

namespace truffld::merge {
namespace {

using nlohmann::ordered_json;

ordered_json ToJson(Count n) { return n; }
ordered_json ToJson(const KindCounts& c) {
  ordered_json o = ordered_json::object();
  for (const auto& [k, n] : c.items) o[EventKindName(k)] = n;
  return o;
}
ordered_json ToJson(const ReasonCounts& c) {
  ordered_json o = ordered_json::object();
  for (const auto& [k, n] : c.items) o[UnattributedName(k)] = n;
  return o;
}
ordered_json ToJson(const FirstSeenCounts<IngestStats::Key>& c) {
  ordered_json o = ordered_json::object();
  for (const auto& [k, n] : c.items) o[IngestStats::Name(k)] = n;
  return o;
}

// The counters object: one member per row of the stats table, in its order.
ordered_json Counters(const MergeCounters& c) {
  ordered_json j;
#define TRUFFLD_COUNTER_JSON(name, type, severity, description) j[#name] = ToJson(c.name);
  TRUFFLD_MERGE_COUNTERS(TRUFFLD_COUNTER_JSON)
#undef TRUFFLD_COUNTER_JSON
  return j;
}

ordered_json OptInt(const std::optional<int64_t>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }
ordered_json OptInt(int64_t v) { return v == kNone ? ordered_json(nullptr) : ordered_json(v); }

// Where the process stood when its dump stopped (merge/core/end_state.h).
ordered_json EndStateJson(const FileEndState& e) {
  ordered_json j;
  j["clean_exit"] = e.clean_exit;
  j["stats_record"] = e.stats_record;
  j["truncated_last_line"] = e.truncated_last_line;
  j["last_event_ns"] = e.last_event;
  j["last_device_end_ns"] = e.last_device_end;
  j["last_alive_ns"] = e.last_alive;
  j["steps_entered"] = e.steps_entered;
  j["last_step"] = e.last_step;
  j["last_step_start_ns"] = e.last_step_start;
  j["last_step_open"] = e.last_step_open;
  ordered_json open = ordered_json::array();
  for (const OpenFrame& f : e.open)
    open.push_back({{"name", f.name}, {"layer", LayerName(f.layer)}, {"start_ns", f.start}, {"thread_id", OptInt(f.thread_id)}});
  j["open_ranges"] = open;
  ordered_json coll = ordered_json::array();
  for (const CollectiveProgress& c : e.collectives)
    coll.push_back({{"communicator", c.communicator}, {"op", c.op}, {"entered", c.entered}, {"bytes", OptInt(c.bytes)},
                    {"world_size", OptInt(c.world_size)}, {"last_start_ns", c.last_start}, {"last_end_ns", c.last_end},
                    {"last_open", c.last_open}});
  j["collectives"] = coll;
  j["pending_launches"] = e.pending_launches;
  ordered_json pending = ordered_json::array();
  for (const PendingLaunch& p : e.first_pending)
    pending.push_back({{"name", p.name}, {"start_ns", p.start}, {"thread_id", OptInt(p.thread_id)},
                       {"stream", p.stream < 0 ? ordered_json(nullptr) : ordered_json(p.stream)}});
  j["first_pending_launches"] = pending;
  return j;
}

}  // namespace

void WriteSummaryJson(const MergeResult& r, const RunInfo& run, JsonOut* out) {
  ordered_json j;
  j["schema"] = "truffld.summary/1";
  j["tool"] = "truffld-merge " + run.version;
  j["axis_clock"] = r.summary.axis_clock;
  j["wall_seconds"] = run.wall_seconds;
  j["inputs"] = run.inputs;
  ordered_json failed = ordered_json::array();
  for (const auto& [p, why] : run.failed_inputs) failed.push_back({{"path", p}, {"error", why}});
  j["failed_inputs"] = failed;
  ordered_json skipped = ordered_json::array();
  ordered_json skipped_by_kind = ordered_json::object();
  for (SkipKind k : {SkipKind::kNotTrace, SkipKind::kTruffldOutput, SkipKind::kDuplicate, SkipKind::kNotRegular})
    skipped_by_kind[SkipKindName(k)] = 0;
  for (const SkippedInput& in : run.skipped_inputs) {
    skipped.push_back({{"path", in.path}, {"reason", in.reason}, {"kind", SkipKindName(in.kind)}});
    skipped_by_kind[SkipKindName(in.kind)] = skipped_by_kind[SkipKindName(in.kind)].get<uint64_t>() + 1;
  }
  j["skipped_inputs"] = skipped;
  j["skipped_by_kind"] = skipped_by_kind;
  j["trees_written"] = run.trees_written;
  j["trees_layout"] = TreeLayoutName(run.tree_layout);
  if (run.trace_written) {
    j["trace"] = {{"slices", run.trace.slices}, {"flows", run.trace.flows},
                  {"moved_to_overflow_track", run.trace.moved_to_overflow_track},
                  {"time_origin_ns", std::to_string(run.trace.time_origin_ns)}};
  }
  j["total"] = Counters(r.summary.total);
  ordered_json ranks = ordered_json::array();
  for (const RankSummary& rs : r.summary.ranks)
    ranks.push_back({{"rank", OptInt(rs.rank)}, {"steps", rs.steps}, {"implicit_steps", rs.implicit_steps}, {"trees", rs.trees},
                     {"steps_in_dumps", rs.steps_in_dumps}});
  j["ranks"] = ranks;
  ordered_json files = ordered_json::array();
  for (const FileSummary& f : r.summary.files) {
    ordered_json fj;
    fj["path"] = f.path;
    fj["format"] = f.format;
    fj["host"] = f.host;
    fj["process_id"] = f.process_id;
    fj["rank"] = OptInt(f.rank);
    fj["clock"] = f.clock;
    fj["clock_offset_ns"] = f.clock_offset_ns;
    fj["clock_offset_method"] = f.clock_offset_method;
    fj["clock_drift_ppm"] = f.clock_drift_ppm;
    fj["clock_ref_ns"] = f.clock_ref_ns;
    fj["counters"] = Counters(f.counters);
    fj["ingest"] = ToJson(f.ingest_counts);
    ordered_json issues = ordered_json::array();
    for (const IngestIssue& i : f.issues)
      issues.push_back({{"where", i.where}, {"kind", ProblemKey(i.kind)}, {"message", i.message}});
    fj["issues"] = issues;
    if (!f.injector_stats_json.empty()) {
      auto stats = ordered_json::parse(f.injector_stats_json, nullptr, false);
      fj["injector_stats"] = stats.is_discarded() ? ordered_json(f.injector_stats_json) : stats;
    }
    fj["end_state"] = EndStateJson(f.end_state);
    files.push_back(std::move(fj));
  }
  j["files"] = files;
  out->Raw(j.dump(2, ' ', false, ordered_json::error_handler_t::replace));
  out->Raw("\n");
}

std::string FormatTextSummary(const MergeResult& r, const RunInfo& run) {
  const MergeCounters& c = r.summary.total;
  std::ostringstream s;
  uint64_t events = 0;
  for (const auto& [k, n] : c.events_read.items) events += n;
  s << "truffld-merge: " << r.files.size() << " file(s), " << events << " events";
  if (!c.events_read.empty()) {
    s << " (";
    for (size_t i = 0; i < c.events_read.items.size(); ++i)
      s << (i ? ", " : "") << EventKindName(c.events_read.items[i].first) << " " << c.events_read.items[i].second;
    s << ")";
  }
  if (!run.failed_inputs.empty()) s << ", " << run.failed_inputs.size() << " unreadable";
  s << "\n  steps " << c.steps << " (" << c.implicit_steps << " implicit) on " << r.summary.ranks.size()
    << " rank(s)";
  const size_t shown_ranks = std::min<size_t>(r.summary.ranks.size(), 8);
  for (size_t i = 0; i < shown_ranks; ++i) {
    const RankSummary& rs = r.summary.ranks[i];
    s << (i ? ", " : ": ") << "rank " << (rs.rank ? std::to_string(*rs.rank) : std::string("?")) << " "
      << rs.steps;
  }
  if (r.summary.ranks.size() > shown_ranks) s << ", ...";
  s << "\n  trees " << c.trees << " (rank, step, request, view), written as " << run.trees_written << " "
    << TreeLayoutName(run.tree_layout) << " line(s)\n";
  // Clock alignment of files not already on the merged axis.
  size_t shown_clocks = 0, aligned = 0;
  for (const FileSummary& f : r.summary.files) {
    if (f.clock_offset_method == "native_realtime") continue;
    ++aligned;
    if (shown_clocks >= 4) continue;
    ++shown_clocks;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%+.6f s, drift %+.2f ppm", double(f.clock_offset_ns) * 1e-9, f.clock_drift_ppm);
    s << "  clock " << std::filesystem::path(f.path).filename().string() << ": " << f.clock << " -> realtime " << buf << " (" << f.clock_offset_method << ")\n";
  }
  if (aligned > shown_clocks) s << "  clock: " << aligned - shown_clocks << " more file(s) aligned (summary.json)\n";
  s << "  device ops " << c.device_ops_read << ": linked " << c.device_ops_linked_unique << ", unattributed "
    << c.device_ops_unattributed;
  if (!c.unattributed_reasons.empty()) {
    s << " (";
    for (size_t i = 0; i < c.unattributed_reasons.items.size(); ++i)
      s << (i ? ", " : "") << UnattributedName(c.unattributed_reasons.items[i].first) << " "
        << c.unattributed_reasons.items[i].second;
    s << ")";
  }
  s << "\n";
  if (c.malformed_lines || c.unmatched_pops || c.unclosed_ranges || c.duplicate_correlations || c.injector_dropped ||
      c.negative_durations)
    s << "  problems: malformed lines " << c.malformed_lines << ", unmatched pops " << c.unmatched_pops
      << ", unclosed ranges " << c.unclosed_ranges << ", duplicate correlations " << c.duplicate_correlations
      << ", negative durations " << c.negative_durations << ", injector-dropped records " << c.injector_dropped
      << " (details in summary.json)\n";
  if (c.steps_without_device_detail)
    s << "  device detail: " << c.steps_without_device_detail
      << " step(s) outside the sampled device windows (no kernels or copies recorded for them)\n";
  if (c.step_names_cut || c.injector_names_truncated)
    s << "  truncated names: " << c.step_names_cut << " step(s) name only part of their requests, "
      << c.injector_names_truncated << " name(s) cut by the injector (ids beyond the cut are lost)\n";
  if (c.injector_api_unpaired)
    s << "  API calls left out: " << c.injector_api_unpaired
      << " (the injector saw only one of their two callbacks: it started during the call, or a device "
         "window's edge fell inside it)\n";
  for (const auto& [p, why] : run.failed_inputs) s << "  not merged: " << why << "\n";
  static constexpr std::pair<SkipKind, const char*> kSkipped[] = {
      {SkipKind::kNotTrace, "non-trace file(s) found in input directories"},
      {SkipKind::kTruffldOutput, "truffld output(s), not inputs"},
      {SkipKind::kDuplicate, "repeated input(s) (same file or same dump as an earlier one)"},
      {SkipKind::kNotRegular, "FIFO(s), socket(s) or device(s) found in input directories"}};
  for (const auto& [kind, what] : kSkipped) {
    std::vector<const std::string*> paths;
    for (const SkippedInput& in : run.skipped_inputs) if (in.kind == kind) paths.push_back(&in.path);
    if (paths.empty()) continue;
    s << "  skipped " << paths.size() << " " << what << ":";
    for (size_t i = 0; i < paths.size() && i < 4; ++i) s << " " << *paths[i];
    s << (paths.size() > 4 ? " ...\n" : "\n");
  }
  if (run.trace_written && run.trace.moved_to_overflow_track)
    s << "  trace.json: " << run.trace.moved_to_overflow_track << " overlapping slice(s) moved to overflow tracks\n";
  return s.str();
}

}  // namespace truffld::merge
