// Merge(): clock alignment, the per-file passes in parallel (file_trees.h), the files' nodes
// concatenated, steps numbered per rank, and the summary tables.
#include <algorithm>
#include <map>
#include <tuple>
#include <type_traits>

#include "core/file_trees.h"
#include "truffld/merge/pipeline.h"
#include "truffld/parallel_for.h"

namespace truffld::merge {
namespace {

// Map onto the merged axis (CLOCK_REALTIME). Realtime files need none; monotonic_raw files are
// mapped through their clock_sync pairs (FitClockMap).
ClockMap AlignClock(const FileMeta& m, FileSummary* fs) {
  fs->clock = ClockName(m.clock);
  ClockMap map;
  if (m.clock == ClockId::kRealtime) fs->clock_offset_method = "native_realtime";
  else if (m.clock_sync.empty()) fs->clock_offset_method = "none";
  else map = FitClockMap(m.clock_sync, &fs->clock_offset_method);
  fs->clock_offset_ns = map.offset;
  fs->clock_drift_ppm = map.drift * 1e6;
  fs->clock_ref_ns = map.ref;
  return map;
}

// A step's place in its rank's numbering: the rank (or, without one, host and process), then
// merged-axis start, input order, line.
using RankKey = std::tuple<int, int64_t, std::string, int64_t>;
struct StepRef {
  RankKey key;
  TimeNs start;
  uint32_t file;
  uint64_t line;
  uint32_t vertical, horizontal, set;
  bool implicit;
  bool device_detail;
};

// Appends one file's nodes and side tables to `res`, shifting node indices by the nodes before
// it and request sets into the merged table; returns its steps.
void Append(uint32_t fi, FileTrees& b, MergeResult* res, std::map<std::vector<std::string>, uint32_t>* set_index,
            std::vector<StepRef>* steps) {
  auto intern_set = [&](const std::vector<std::string>& s) {
    auto [it, fresh] = set_index->emplace(s, uint32_t(res->request_sets.size()));
    if (fresh) res->request_sets.push_back(s);
    return it->second;
  };
  const uint32_t base = uint32_t(res->nodes.size());
  std::vector<uint32_t> remap;
  for (auto& s : b.request_sets) remap.push_back(intern_set(s));
  for (Node& n : b.nodes) {
    if (n.first_child != kNoNode) n.first_child += base;
    if (n.next_sibling != kNoNode) n.next_sibling += base;
  }
  for (auto [node, set] : b.requests) res->node_requests.push_back({node + base, remap[set]});
  for (auto [node, anchor] : b.anchors) res->node_anchors.push_back({node + base, anchor + base});
  for (auto [node, payload] : b.payloads) res->node_payloads.push_back({node + base, payload});
  if (fi == 0) {
    // The first file's nodes are taken over, not copied: a one-file merge never holds its
    // nodes twice (Merge sized them for every file's).
    const size_t total = res->nodes.capacity();
    res->nodes = std::move(b.nodes);
    res->nodes.reserve(total);
  } else {
    res->nodes.insert(res->nodes.end(), b.nodes.begin(), b.nodes.end());
  }
  std::vector<Node>().swap(b.nodes);  // (`= {}` would keep the capacity)
  res->implicit_step_names[fi] = b.implicit_name;
  const FileMeta& m = res->files[fi].meta;
  for (const StepRoot& s : b.steps) {
    const int64_t pid = s.process_id != kNone ? s.process_id : m.process_id;
    RankKey key = m.rank ? RankKey(0, *m.rank, std::string(), 0) : RankKey(1, 0, m.host, pid);
    steps->push_back({key, s.start, fi, s.line, s.vertical + base, s.horizontal + base, intern_set(s.requests), s.implicit,
                      s.device_detail});
  }
}

// The summary of file i from its trees' counters and its importer's table.
void SummariseFile(const TraceFile& f, MergeCounters counters, FileSummary* fs) {
  fs->path = f.meta.path;
  fs->format = f.meta.format;
  fs->host = f.meta.host;
  fs->process_id = f.meta.process_id;
  fs->rank = f.meta.rank;
  fs->injector_stats_json = f.meta.stats_json;
  fs->counters = std::move(counters);
  fs->counters.malformed_lines = MalformedLines(f.stats);
  fs->counters.negative_durations = NegativeDurations(f.stats);
  fs->counters.injector_dropped = f.stats.Get(Problem::kInjectorDropped);
  fs->issues = f.stats.issues;
  fs->ingest_counts = f.stats.counts;
}

// Two trees per step (vertical, horizontal), numbered per rank in time order; only the steps
// of the step window (MergeOptions) make trees.
void NumberSteps(std::vector<StepRef> steps, const MergeOptions& options, MergeResult* res) {
  std::stable_sort(steps.begin(), steps.end(), [](const StepRef& a, const StepRef& b) {
    return std::tie(a.key, a.start, a.file, a.line) < std::tie(b.key, b.start, b.file, b.line);
  });
  std::map<RankKey, RankSummary> ranks;
  uint32_t ordinal = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepRef& s = steps[i];
    ordinal = (i > 0 && steps[i - 1].key == s.key) ? ordinal + 1 : 0;
    const FileMeta& m = res->files[s.file].meta;
    RankSummary& rs = ranks[s.key];
    rs.rank = m.rank;
    ++rs.steps_in_dumps;
    if (!InStepWindow(ordinal, options)) continue;
    for (View view : {View::kVertical, View::kHorizontal}) {
      Tree t;
      t.root = view == View::kVertical ? s.vertical : s.horizontal;
      t.file = s.file;
      t.process_id = std::get<0>(s.key) == 1 ? std::get<3>(s.key) : m.process_id;
      t.rank = m.rank;
      t.step_index = ordinal;
      t.requests = s.set;
      t.view = view;
      t.implicit_step = s.implicit;
      t.device_detail = s.device_detail;
      res->trees.push_back(t);
    }
    const uint64_t n_trees = 2 * res->request_sets[s.set].size();
    res->summary.files[s.file].counters.trees += n_trees;
    ++rs.steps;
    rs.implicit_steps += s.implicit;
    rs.trees += n_trees;
  }
  for (auto& [k, rs] : ranks) res->summary.ranks.push_back(rs);
}

// --strict: the first counted problem of the merge (a kProblem row of the stats table, or a
// device op unattributed for a kProblem reason), as an error.
Status StrictCheck(const MergeSummary& summary) {
  auto nonzero = [](const auto& v) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, Count>) return v != 0;
    else return false;  // the per-kind and per-reason tables are judged below
  };
  for (const FileSummary& fs : summary.files) {
    const MergeCounters& c = fs.counters;
    bool problem = false;
#define TRUFFLD_COUNTER_PROBLEM(name, type, severity, description) \
  problem |= Severity::severity == Severity::kProblem && nonzero(c.name);
    TRUFFLD_MERGE_COUNTERS(TRUFFLD_COUNTER_PROBLEM)
#undef TRUFFLD_COUNTER_PROBLEM
    if (problem) {
      std::string first = fs.issues.empty() ? fs.path : fs.issues[0].where + ": " + fs.issues[0].message;
      return ParseError("--strict: " + first);
    }
    for (const auto& [why, v] : c.unattributed_reasons.items)
      if (SeverityOf(why) == Severity::kProblem && v)
        return ParseError("--strict: " + fs.path + ": " + std::to_string(v) + " device operation(s) " + UnattributedName(why));
  }
  return Status::Ok();
}

}  // namespace

// One process and no rank anywhere (a plain PyTorch program, one profiler trace): it is rank 0.
static void AssumeRankZero(std::vector<TraceFile>* files) {
  if (files->empty()) return;
  const FileMeta& first = (*files)[0].meta;
  for (const TraceFile& f : *files) {
    if (f.meta.rank || f.meta.host != first.host || f.meta.process_id != first.process_id) return;
  }
  for (TraceFile& f : *files) f.meta.rank = 0;
}

Result<MergeResult> Merge(std::vector<TraceFile> files, const MergeOptions& options) {
  MergeResult res;
  AssumeRankZero(&files);
  res.files = std::move(files);
  res.summary.axis_clock = "realtime";
  const size_t nf = res.files.size();
  if (nf > Node::kMaxFiles)
    return InvalidArgument("too many input files (" + std::to_string(nf) + "); at most " +
                           std::to_string(Node::kMaxFiles) + " can be merged at once");
  res.summary.files.resize(nf);
  res.implicit_step_names.assign(nf, kNoStr);
  std::vector<ClockMap> maps(nf);
  for (size_t i = 0; i < nf; ++i) {
    maps[i] = AlignClock(res.files[i].meta, &res.summary.files[i]);
    res.files[i].extra_interner.Release(res.files[i].extras);  // the import is done: no more sharing to find
    res.files[i].SortThreads();  // (importers did; files built by hand may not have)
  }
  std::vector<FileTrees> built(nf);
  ParallelFor(nf, options.threads, [&](size_t i) { built[i] = BuildFileTrees(uint32_t(i), res.files[i], maps[i], options); });
  size_t total_nodes = 0;
  for (const FileTrees& b : built) total_nodes += b.nodes.size();
  // Node indices are uint32 with kNoNode (and, in trace.json writing, kNoNode - 1) as markers.
  if (total_nodes >= size_t(kNoNode) - 1)
    return InvalidArgument("too many tree nodes (" + std::to_string(total_nodes) + "); at most " +
                           std::to_string(kNoNode - 2) + " can be merged at once");
  res.nodes.reserve(total_nodes);  // Append takes the first file's nodes over: see there
  std::map<std::vector<std::string>, uint32_t> set_index;
  std::vector<StepRef> steps;
  for (size_t i = 0; i < nf; ++i) {
    Append(uint32_t(i), built[i], &res, &set_index, &steps);
    SummariseFile(res.files[i], std::move(built[i].counters), &res.summary.files[i]);
    res.summary.files[i].end_state = std::move(built[i].end_state);
  }
  NumberSteps(std::move(steps), options, &res);
  for (const FileSummary& fs : res.summary.files) res.summary.total.Add(fs.counters);
  if (options.strict) TRUFFLD_RETURN_IF_ERROR(StrictCheck(res.summary));
  return res;
}

}  // namespace truffld::merge
