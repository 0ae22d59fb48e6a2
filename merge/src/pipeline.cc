// Merge(): clock alignment, per-file tree building (in parallel), step numbering per rank,
// and the summary tables.
#include "truffld/merge/pipeline.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <thread>
#include <tuple>

#include "tree_builder.h"
#include "truffld/parallel_for.h"

namespace truffld::merge {

const char* ViewName(View v) noexcept { return v == View::kVertical ? "vertical" : "horizontal"; }

void MergeCounters::AddReason(const std::string& reason, uint64_t n) {
  for (auto& [k, v] : unattributed_reasons)
    if (k == reason) { v += n; return; }
  unattributed_reasons.emplace_back(reason, n);
}

void MergeCounters::Add(const MergeCounters& o) {
  for (const auto& kv : o.events_read) {
    auto it = std::find_if(events_read.begin(), events_read.end(), [&](auto& p) { return p.first == kv.first; });
    if (it == events_read.end()) events_read.push_back(kv);
    else it->second += kv.second;
  }
  for (const auto& [k, n] : o.unattributed_reasons) AddReason(k, n);
  malformed_lines += o.malformed_lines;
  unmatched_pops += o.unmatched_pops;
  unclosed_ranges += o.unclosed_ranges;
  zero_length_ranges += o.zero_length_ranges;
  negative_durations += o.negative_durations;
  duplicate_correlations += o.duplicate_correlations;
  nested_api_calls += o.nested_api_calls;
  kernels_read += o.kernels_read;
  memcpys_read += o.memcpys_read;
  memsets_read += o.memsets_read;
  device_ops_read += o.device_ops_read;
  device_ops_linked_unique += o.device_ops_linked_unique;
  device_ops_unattributed += o.device_ops_unattributed;
  kernels_linked_unique += o.kernels_linked_unique;
  kernels_unattributed += o.kernels_unattributed;
  api_calls_outside_step += o.api_calls_outside_step;
  adopted_ranges += o.adopted_ranges;
  adopted_api_calls += o.adopted_api_calls;
  graph_ops_attributed += o.graph_ops_attributed;
  capture_ranges_outside_steps += o.capture_ranges_outside_steps;
  injector_dropped += o.injector_dropped;
  steps += o.steps;
  implicit_steps += o.implicit_steps;
  trees += o.trees;
}

const ImplicitSpan* FindImplicitSpan(const std::vector<ImplicitSpan>& spans, uint32_t node) {
  auto it = std::lower_bound(spans.begin(), spans.end(), node,
                             [](const ImplicitSpan& s, uint32_t v) { return s.node < v; });
  return it != spans.end() && it->node == node ? &*it : nullptr;
}

const ImplicitSpan& MergeResult::Implicit(const Node& n) const {
  static const ImplicitSpan kMissing{};  // an event-less node built by hand, with no span
  const std::less<const Node*> before;
  if (before(&n, nodes.data()) || !before(&n, nodes.data() + nodes.size())) return kMissing;  // a copy
  const ImplicitSpan* sp = FindImplicitSpan(implicit_spans, static_cast<uint32_t>(&n - nodes.data()));
  return sp ? *sp : kMissing;
}

uint32_t LookUpSide(const NodeSideTable& t, uint32_t i, uint32_t none) {
  auto it = std::lower_bound(t.begin(), t.end(), i, [](const std::pair<uint32_t, uint32_t>& e, uint32_t v) { return e.first < v; });
  return it != t.end() && it->first == i ? it->second : none;
}

bool MergeResult::InRequestSet(uint32_t set, std::string_view q) const {
  if (set == kAllRequests || set >= request_sets.size()) return true;
  for (const auto& id : request_sets[set])
    if (id == q || id == "*") return true;
  return false;
}

namespace {

// Map onto the merged axis (CLOCK_REALTIME). Realtime files need none; monotonic_raw files
// are mapped through their clock_sync pairs (FitClockMap).
ClockMap AlignClock(const FileMeta& m, FileSummary* fs) {
  fs->clock = ClockName(m.clock);
  ClockMap map;
  if (m.clock == ClockId::kRealtime) {
    fs->clock_offset_method = "native_realtime";
  } else if (m.clock_sync.empty()) {
    fs->clock_offset_method = "none";
  } else {
    map = FitClockMap(m.clock_sync, &fs->clock_offset_method);
  }
  fs->clock_offset_ns = map.offset;
  fs->clock_drift_ppm = map.drift * 1e6;
  fs->clock_ref_ns = map.ref;
  return map;
}

// Importer problem keys are the raw parser's ("missing_field") or prefixed by the importer
// ("kineto.bad_number", "nsys.missing_field"); "*.skipped.*" counts records skipped by design.
std::string_view ProblemBase(std::string_view k) {
  for (std::string_view prefix : {"kineto.", "nsys."})
    if (k.substr(0, prefix.size()) == prefix) return k.substr(prefix.size());
  return k;
}

uint64_t MalformedOf(const IngestStats& s) {
  uint64_t n = 0;
  for (const auto& [key, v] : s.counts) {
    std::string_view k = ProblemBase(key);
    if (k == "malformed_json" || k == "unknown_type" || k == "missing_field" || k == "bad_field" ||
        k == "invalid_utf8" || k == "truncated_last_line" || k == "truncated" || k == "long_lines_skipped" ||
        k == "read_warning" || k == "not_an_object" || k == "bad_number" || k == "bad_time" ||
        k == "missing_correlation")
      n += v;
  }
  return n;
}

uint64_t NegativeDurationsOf(const IngestStats& s) {
  uint64_t n = 0;
  for (const auto& [key, v] : s.counts)
    if (ProblemBase(key) == "negative_duration") n += v;
  return n;
}

}  // namespace

ClockMap FitClockMap(const std::vector<std::pair<TimeNs, TimeNs>>& pairs, std::string* method) {
  ClockMap map;
  if (pairs.empty()) {
    *method = "none";
    return map;
  }
  // (monotonic, realtime - monotonic) for the pairs whose difference fits in int64 (hostile
  // input may not), in monotonic order.
  std::vector<std::pair<TimeNs, TimeNs>> p;
  for (auto [rt, mono] : pairs) {
    TimeNs diff;
    if (!__builtin_sub_overflow(rt, mono, &diff)) p.emplace_back(mono, diff);
  }
  if (p.empty()) {
    *method = "none";
    return map;
  }
  std::sort(p.begin(), p.end());
  std::vector<TimeNs> dm;
  for (const auto& q : p) dm.push_back(q.second);
  std::nth_element(dm.begin(), dm.begin() + dm.size() / 2, dm.end());
  map.offset = dm[dm.size() / 2];
  map.ref = 0;
  *method = "clock_sync_median";
  const double span = double(p.back().first) - double(p.front().first);
  if (p.size() < 3 || span < 1e10) return map;
  // Theil-Sen over at most ~256 evenly spaced pairs (a day of 60 s CLOCK records is 1440).
  std::vector<size_t> idx;
  const size_t step = std::max<size_t>(1, p.size() / 256);
  for (size_t i = 0; i < p.size(); i += step) idx.push_back(i);
  std::vector<double> slopes;
  for (size_t a = 0; a < idx.size(); ++a)
    for (size_t b = a + 1; b < idx.size(); ++b) {
      const auto& x = p[idx[a]];
      const auto& y = p[idx[b]];
      const double dx = double(y.first) - double(x.first);
      if (dx < 1e9) continue;  // pairs under a second apart say nothing about drift
      slopes.push_back((double(y.second) - double(x.second)) / dx);
    }
  if (slopes.empty()) return map;
  std::nth_element(slopes.begin(), slopes.begin() + slopes.size() / 2, slopes.end());
  const double slope = slopes[slopes.size() / 2];
  if (!(std::fabs(slope) < 1e-3)) return map;  // over 1000 ppm: not a clock, keep the median
  map.drift = slope;
  map.ref = p[p.size() / 2].first;
  std::vector<TimeNs> resid;
  for (size_t i = 0; i < p.size(); ++i) {
    // |slope| < 1e-3, so the drift term is far inside int64 even for extreme times.
    const TimeNs drift_ns = static_cast<TimeNs>(slope * (double(p[i].first) - double(map.ref)));
    resid.push_back(static_cast<TimeNs>(static_cast<uint64_t>(p[i].second) - static_cast<uint64_t>(drift_ns)));
  }
  std::nth_element(resid.begin(), resid.begin() + resid.size() / 2, resid.end());
  map.offset = resid[resid.size() / 2];
  *method = "clock_sync_linear";
  return map;
}

Result<MergeResult> Merge(std::vector<TraceFile> files, const MergeOptions& options) {
  MergeResult res;
  res.files = std::move(files);
  res.summary.axis_clock = "realtime";
  const size_t nf = res.files.size();
  if (nf > Node::kMaxFiles)
    return InvalidArgument("too many input files (" + std::to_string(nf) + "); at most " +
                           std::to_string(Node::kMaxFiles) + " can be merged at once");
  res.summary.files.resize(nf);
  std::vector<FileTrees> built(nf);
  std::vector<ClockMap> maps(nf);
  for (size_t i = 0; i < nf; ++i) {
    maps[i] = AlignClock(res.files[i].meta, &res.summary.files[i]);
    res.files[i].extra_interner.Release(res.files[i].extras);  // the import is done: no more sharing to find
    res.files[i].SortThreads();             // (importers did; files built by hand may not have)
  }
  ParallelFor(nf, options.threads, [&](size_t i) {
    built[i] = BuildFileTrees(uint32_t(i), res.files[i], maps[i], options);
  });
#ifdef __GLIBC__
  // The builders' temporaries were freed in the worker threads' malloc arenas, which keep freed
  // memory resident; hand it back before the nodes are concatenated (the merge's memory peak).
  malloc_trim(0);
#endif

  // Concatenate nodes; remap request-set indices into the merged table.
  std::map<std::vector<std::string>, uint32_t> set_index;
  auto intern_set = [&](const std::vector<std::string>& s) {
    auto [it, fresh] = set_index.emplace(s, uint32_t(res.request_sets.size()));
    if (fresh) res.request_sets.push_back(s);
    return it->second;
  };
  struct StepRef { std::tuple<int, int64_t, std::string, int64_t> key; TimeNs start; uint32_t file; uint64_t line; uint32_t v, h, set; bool implicit; };
  std::vector<StepRef> steps;
  size_t total_nodes = 0;
  for (auto& b : built) total_nodes += b.nodes.size();
  // Node indices are uint32 with kNoNode (and, in trace.json writing, kNoNode - 1) as markers.
  if (total_nodes >= size_t(kNoNode) - 1)
    return InvalidArgument("too many tree nodes (" + std::to_string(total_nodes) + "); at most " +
                           std::to_string(kNoNode - 2) + " can be merged at once");
  for (size_t i = 0; i < nf; ++i) {
    FileTrees& b = built[i];
    const uint32_t base = uint32_t(res.nodes.size());
    std::vector<uint32_t> remap;
    for (auto& s : b.request_sets) remap.push_back(intern_set(s));
    for (ImplicitSpan sp : b.implicit) {  // files in order, each file's ascending: stays sorted
      sp.node += base;
      res.implicit_spans.push_back(sp);
    }
    for (Node& n : b.nodes) {
      if (n.first_child != kNoNode) n.first_child += base;
      if (n.next_sibling != kNoNode) n.next_sibling += base;
    }
    for (auto [node, set] : b.requests) res.node_requests.push_back({node + base, remap[set]});
    for (auto [node, anchor] : b.anchors) res.node_anchors.push_back({node + base, anchor + base});
    if (i == 0) {
      // The first file's nodes are taken over, not copied (a single-file merge never holds
      // its nodes twice).
      res.nodes = std::move(b.nodes);
      res.nodes.reserve(total_nodes);
    } else {
      res.nodes.insert(res.nodes.end(), b.nodes.begin(), b.nodes.end());
    }
    // Release the file's nodes now (swap: `b.nodes = {}` would pick the initializer-list
    // assignment, which keeps the capacity: every file's nodes then stayed resident while the
    // merged copy grew, ~50 B/event at the peak of a many-file merge).
    std::vector<Node>().swap(b.nodes);
    const FileMeta& m = res.files[i].meta;
    for (const StepRoot& s : b.steps) {
      int64_t pid = s.process_id != kNone ? s.process_id : m.process_id;
      auto key = m.rank ? std::make_tuple(0, *m.rank, std::string(), int64_t(0)) : std::make_tuple(1, int64_t(0), m.host, pid);
      steps.push_back({key, s.start, uint32_t(i), s.line, s.vertical + base, s.horizontal + base, intern_set(s.requests), s.implicit});
    }
    FileSummary& fs = res.summary.files[i];
    fs.path = m.path;
    fs.format = m.format;
    fs.host = m.host;
    fs.process_id = m.process_id;
    fs.rank = m.rank;
    fs.injector_stats_json = m.stats_json;
    fs.counters = b.counters;
    fs.counters.malformed_lines = MalformedOf(res.files[i].stats);
    fs.counters.negative_durations = NegativeDurationsOf(res.files[i].stats);
    fs.counters.injector_dropped = res.files[i].stats.Get("injector_dropped");
    fs.issues = res.files[i].stats.issues;
    fs.ingest_counts = res.files[i].stats.counts;
  }
  std::stable_sort(steps.begin(), steps.end(), [](const StepRef& a, const StepRef& b) {
    if (a.key != b.key) return a.key < b.key;
    if (a.start != b.start) return a.start < b.start;
    if (a.file != b.file) return a.file < b.file;
    return a.line < b.line;
  });
  std::map<std::tuple<int, int64_t, std::string, int64_t>, RankSummary> ranks;
  uint32_t ordinal = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepRef& s = steps[i];
    ordinal = (i > 0 && steps[i - 1].key == s.key) ? ordinal + 1 : 0;
    const FileMeta& m = res.files[s.file].meta;
    for (View view : {View::kVertical, View::kHorizontal}) {
      Tree t;
      t.root = view == View::kVertical ? s.v : s.h;
      t.file = s.file;
      t.process_id = std::get<0>(s.key) == 1 ? std::get<3>(s.key) : m.process_id;
      t.rank = m.rank;
      t.step_index = ordinal;
      t.requests = s.set;
      t.view = view;
      t.implicit_step = s.implicit;
      res.trees.push_back(t);
    }
    uint64_t n_trees = 2 * res.request_sets[s.set].size();
    res.summary.files[s.file].counters.trees += n_trees;
    RankSummary& rs = ranks[s.key];
    rs.rank = m.rank;
    ++rs.steps;
    rs.implicit_steps += s.implicit;
    rs.trees += n_trees;
  }
  for (auto& [k, rs] : ranks) res.summary.ranks.push_back(rs);
  for (const FileSummary& fs : res.summary.files) res.summary.total.Add(fs.counters);
  if (options.strict) {
    for (const FileSummary& fs : res.summary.files) {
      const MergeCounters& c = fs.counters;
      if (c.unmatched_pops || c.unclosed_ranges || c.duplicate_correlations || c.malformed_lines ||
          c.negative_durations) {
        std::string first = fs.issues.empty() ? fs.path : fs.issues[0].where + ": " + fs.issues[0].message;
        return ParseError("--strict: " + first);
      }
      for (const auto& [k, v] : c.unattributed_reasons)
        if (k != "launch_outside_step" && v)
          return ParseError("--strict: " + fs.path + ": " + std::to_string(v) + " device operation(s) " + k);
    }
  }
  return res;
}

}  // namespace truffld::merge
