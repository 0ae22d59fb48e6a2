// TreeReader: walks each trees.jsonl line with simdjson's DOM and turns operator nodes into
// deduplicated InstanceTable rows with raw features (see instances.h for the feature list).
#include "read/tree_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <set>
#include <simdjson.h>

#include "read/graph_replay.h"
#include "read/outside_time.h"
#include "read/tree_reader_impl.h"
#include "truffld/step_tags.h"
#include "truffld/utf8.h"
#include "truffld/line_reader.h"

namespace truffld::diagnose {

using detail::GetInt;
using detail::GetStr;
using detail::HashText;
using detail::MixHash;
using detail::NormalizePhase;
using detail::PendingInstance;
using detail::StepBucket;

namespace {

// A line's own numbers and their ranges (truffld.trees/1): the step index and rank key and size
// tables, token counts enter sums, and times must differ within int64. Outside them the line is
// bad, its field named, rather than overflowing later (a step_index of 2^63-1 aborted the report).
struct FieldRange {
  const char* key;
  int64_t lo, hi;
};
constexpr int64_t kMaxStepIndex = int64_t{1} << 40;
constexpr int64_t kMaxCount = int64_t{1} << 58;  // as StepNameTag's [tokens:N]
constexpr FieldRange kFieldRanges[] = {
    {"step_index", 0, kMaxStepIndex},      {"rank", INT32_MIN, INT32_MAX},
    {"start", -detail::kMaxTimeNs, detail::kMaxTimeNs}, {"end", -detail::kMaxTimeNs, detail::kMaxTimeNs},
    {"tokens", -1, kMaxCount},             {"ctx", -1, kMaxCount},
    {"batch", -1, kMaxCount}};

// "field V out of range [lo, hi]" for the first number of kFieldRanges outside its range, or "".
// Members that are absent or not numbers are left to the reader's own checks and defaults.
std::string OutOfRangeField(simdjson::dom::object o) {
  for (const FieldRange& r : kFieldRanges) {
    simdjson::dom::element e;
    if (o[r.key].get(e) != simdjson::SUCCESS) continue;
    int64_t i = 0;
    uint64_t u = 0;
    double d = 0;
    std::string value;
    if (e.get_int64().get(i) == simdjson::SUCCESS) {
      if (i >= r.lo && i <= r.hi) continue;
      value = std::to_string(i);
    } else if (e.get_uint64().get(u) == simdjson::SUCCESS) {
      value = std::to_string(u);  // past INT64_MAX
    } else if (e.get_double().get(d) == simdjson::SUCCESS) {
      if (d >= static_cast<double>(r.lo) && d <= static_cast<double>(r.hi)) continue;
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", d);
      value = buf;
    } else {
      continue;
    }
    return std::string(r.key) + " " + value + " out of range [" + std::to_string(r.lo) + ", " +
           std::to_string(r.hi) + "]";
  }
  return {};
}

// The integer after "key": in `line` (only a real key matches: inside a JSON string the quotes
// are escaped), or -1. Names the step of a line the parser refused.
int64_t KeyNumber(std::string_view line, std::string_view key) {
  const std::string pattern = "\"" + std::string(key) + "\":";
  size_t at = line.find(pattern);
  if (at == std::string_view::npos) return -1;
  at = line.find_first_not_of(" \t", at + pattern.size());
  int64_t v = -1;
  if (at != std::string_view::npos) std::from_chars(line.data() + at, line.data() + line.size(), v);
  return v;
}

// The problem for a tree nested past the parser's depth limit, naming its step (and rank).
std::string TooDeepProblem(std::string_view line) {
  const int64_t step = KeyNumber(line, "step_index"), rank = KeyNumber(line, "rank");
  return "tree nested deeper than " + std::to_string(kMaxTreeJsonDepth) + " JSON levels (about " +
         std::to_string(kMaxTreeJsonDepth / 2) + " ranges) in step " +
         (step < 0 ? std::string("?") : std::to_string(step)) +
         (rank < 0 ? std::string() : " of rank " + std::to_string(rank)) + ": skipped";
}

// Marks the steps outside every device window that recorded no operator range, only
// communication (two-tier capture), in both views (StepInfo::operator_detail).
void MarkOperatorDetail(std::map<StepKey, StepBucket>& buckets, uint32_t comm, ReadStats* stats) {
  for (auto& [key, b] : buckets) {
    if (key.horizontal || b.info.device_detail) continue;
    const bool ops = std::any_of(b.instances.begin(), b.instances.end(),
                                 [&](const PendingInstance& p) { return p.layer != comm; });
    if (ops) continue;
    b.info.operator_detail = false;
    ++stats->step_level_steps;
    if (auto it = buckets.find(StepKey{key.rank, key.step_index, true}); it != buckets.end())
      it->second.info.operator_detail = false;
  }
}

// The device work of a vertical step's rank and step: both views' (comm kernels may sit in the
// horizontal trees only).
std::vector<std::pair<int64_t, int64_t>> StepBusy(const std::map<StepKey, StepBucket>& buckets, const StepBucket& b) {
  std::vector<std::pair<int64_t, int64_t>> busy = b.busy;
  const StepKey h{b.info.rank.value_or(-1), b.info.step_index, true};
  if (auto it = buckets.find(h); it != buckets.end()) busy.insert(busy.end(), it->second.busy.begin(), it->second.busy.end());
  return busy;
}

// Each vertical step's pseudo-instances for the time no operator covers, and every step's
// prev_device_end (the previous step's device work that ran past its host end).
void AddOutsideTime(std::map<StepKey, StepBucket>& buckets, bool judge, StringTable* strings, ReadStats* stats) {
  std::map<std::pair<int64_t, int64_t>, int64_t> device_end;  // (rank, step) -> latest device end
  std::set<std::pair<int64_t, int64_t>> sends;                // (rank, step) sent to another stage
  std::map<int64_t, std::vector<StepBucket*>> lanes;          // rank -> its vertical steps in order
  const uint32_t comm = strings->Intern("comm");
  const uint32_t between = judge ? strings->Intern(kBetweenStepsFamily) : kNoString;
  MarkOperatorDetail(buckets, comm, stats);
  for (auto& [key, b] : buckets) {
    int64_t& end = device_end[{key.rank, key.step_index}];
    for (const PendingInstance& p : b.instances) {
      if (p.detail.flags & kDetailHasDevice) end = std::max(end, p.detail.device_end);
      if (p.layer == comm && IsSendFamily(strings->Get(p.family))) sends.insert({key.rank, key.step_index});
    }
    if (!key.horizontal) lanes[key.rank].push_back(&b);
  }
  for (auto& [rank, steps] : lanes) {
    std::vector<const StepInfo*> infos;
    for (const StepBucket* b : steps) infos.push_back(&b->info);
    std::vector<bool> carries = detail::CarriesWork(infos);
    // A pipeline stage that sent its activations on waits for the later stages before the next
    // step: that time is the pipeline's, judged through its transfers, not the scheduler's.
    for (size_t k = 1; k < steps.size(); ++k)
      if (sends.count({rank, steps[k - 1]->info.step_index})) carries[k] = false;
    std::set<int64_t> graphs;  // CUDA graphs the rank replayed so far
    std::set<int64_t> decodes;  // token counts of the rank's decode steps so far
    for (size_t k = 0; k < steps.size(); ++k) {
      StepBucket& b = *steps[k];
      const StepBucket* prev = k > 0 ? steps[k - 1] : nullptr;
      // The first replay of a CUDA graph: it was captured and instantiated since the last step.
      bool new_graph = false;
      for (int64_t id : b.graph_ids) new_graph = graphs.insert(id).second || new_graph;
      // Without operator detail no replayed kernel names its graph: a decode step of a batch size
      // the rank never decoded before may be the first replay of a graph captured for it.
      if (b.info.phase == "decode" && b.info.tokens >= 0)
        new_graph = (decodes.insert(b.info.tokens).second && !b.info.operator_detail) || new_graph;
      if (prev && prev->info.step_index + 1 == b.info.step_index) {
        const int64_t tail = device_end[{rank, prev->info.step_index}];
        if (tail > prev->info.end_ns) {
          b.info.prev_device_end = tail;
          if (auto it = buckets.find(StepKey{rank, b.info.step_index, true}); it != buckets.end())
            it->second.info.prev_device_end = tail;
        }
      }
      if (!judge) continue;
      b.outside = detail::OutsideInstances(b, prev, carries[k], strings);
      if (auto idle = detail::DeviceIdleInstance(b.info, StepBusy(buckets, b), strings)) b.outside.push_back(std::move(*idle));
      // That capture is warm-up, like loading a kernel: reported, not judged (peer/warmup.h).
      for (PendingInstance& p : b.outside)
        if (new_graph && p.family == between) p.detail.flags |= kDetailLoadsCode;
      stats->outside_instances += b.outside.size();
      stats->instances += b.outside.size();
    }
  }
}

// A step's instances by start, ties in the order they were read (a stable sort), with room for
// `extra` more. Walk emits an operator after the ranges nested in it, so most steps need the
// sort; sorting (start, index) pairs moves each instance once, where sorting the instances
// themselves moved them about log2(n) times.
void SortByStart(std::vector<PendingInstance>* ins, size_t extra) {
  std::vector<std::pair<int64_t, uint32_t>> order(ins->size());
  for (uint32_t i = 0; i < ins->size(); ++i) order[i] = {(*ins)[i].start, i};
  if (std::is_sorted(order.begin(), order.end())) return;
  std::sort(order.begin(), order.end());
  std::vector<PendingInstance> sorted;
  sorted.reserve(ins->size() + extra);
  for (const auto& [start, i] : order) sorted.push_back(std::move((*ins)[i]));
  ins->swap(sorted);
}

}  // namespace

TreeReader::TreeReader() : impl_(std::make_unique<Impl>()) { impl_->stats = &stats_; }
TreeReader::~TreeReader() = default;
void TreeReader::set_graph_vertical_ops(bool on) { impl_->graph_vertical_ops = on; }
void TreeReader::set_outside_time(bool on) { impl_->outside_time = on; }

void TreeReader::ParseLine(std::string_view line, const std::string& where) {
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;
  ++stats_.lines;
  auto problem = [&](const std::string& msg) {
    ++stats_.bad_lines;
    if (stats_.problems.size() < ReadStats::kMaxProblems) stats_.problems.push_back(where + ": " + msg);
  };
  simdjson::dom::element doc;
  auto err = impl_->parser.parse(line.data(), line.size()).get(doc);
  std::string repaired;
  if (err == simdjson::UTF8_ERROR) {
    // Names from other producers may hold invalid UTF-8; repair it the way truffld-merge does
    // (one U+FFFD per bad byte) instead of losing the whole tree.
    repaired = RepairedUtf8(line, line.size());
    err = impl_->parser.parse(repaired.data(), repaired.size()).get(doc);
    if (!err) ++stats_.repaired_lines;
  }
  if (err == simdjson::DEPTH_ERROR) {
    ++stats_.too_deep_trees;
    return problem(TooDeepProblem(line));
  }
  if (err) {
    problem(std::string("not JSON: ") + simdjson::error_message(err));
    return;
  }
  simdjson::dom::object o;
  if (doc.get_object().get(o) != simdjson::SUCCESS) return problem("not a JSON object");
  std::string_view schema = GetStr(o, "schema");
  if (schema != "truffld.trees/1") {
    return problem("schema is '" + std::string(schema) + "', expected 'truffld.trees/1'");
  }
  View view = View::kVertical;
  if (!ParseView(GetStr(o, "view"), &view)) return problem("view must be vertical or horizontal");
  int64_t step_index = GetInt(o, "step_index", -1);
  if (step_index < 0) return problem("missing or negative step_index");
  if (std::string bad = OutOfRangeField(o); !bad.empty()) return problem(bad);
  simdjson::dom::object root;
  if (o["root"].get_object().get(root) != simdjson::SUCCESS) return problem("missing root node");
  int64_t rank = -1;
  const bool has_rank = o["rank"].get_int64().get(rank) == simdjson::SUCCESS;
  const StepKey key{has_rank ? rank : -1, step_index, view == View::kHorizontal};
  StepBucket& b = impl_->buckets[key];
  if (b.info.trees == 0) {
    b.instances.reserve(impl_->instance_hint[key.horizontal]);  // the size of the last such step
    if (has_rank) b.info.rank = rank;
    b.info.step_index = step_index;
    b.info.view = view;
    b.info.step_name = std::string(GetStr(o, "step"));
    b.info.host = std::string(GetStr(o, "host"));
    b.info.start_ns = GetInt(o, "start", 0);
    b.info.end_ns = GetInt(o, "end", b.info.start_ns);
    // Fields from the hooks' [tokens:N][ctx:N] tags (older trees: only in the step name).
    b.info.tokens = GetInt(o, "tokens", -1);
    if (b.info.tokens < 0) b.info.tokens = StepNameTag(b.info.step_name, "tokens");
    b.info.context = GetInt(o, "ctx", -1);
    if (b.info.context < 0) b.info.context = StepNameTag(b.info.step_name, "ctx");
    b.info.batch = GetInt(o, "batch", -1);  // an engine annotation's request count
    bool detail = true;
    if (o["device_detail"].get_bool().get(detail) == simdjson::SUCCESS) b.info.device_detail = detail;
    simdjson::dom::array reqs;
    if (o["requests"].get_array().get(reqs) == simdjson::SUCCESS) {
      for (auto r : reqs) {
        std::string_view s;
        if (r.get_string().get(s) == simdjson::SUCCESS) b.info.requests.emplace_back(s);
      }
    }
  }
  // Phase: from the first tree that names one (all trees of a step should agree).
  if (std::string phase = NormalizePhase(GetStr(o, "phase"));
      !phase.empty() && b.info.phase == "unknown") {
    b.info.phase = std::move(phase);
  }
  ++b.info.trees;
  ++stats_.trees;
  impl_->bucket = &b;
  impl_->key = key;
  impl_->Walk(root, kNoString, INT64_MIN);
  impl_->instance_hint[key.horizontal] = b.instances.size();
}

Result<std::string> ResolveTreesPath(const std::string& path_or_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path_or_dir, ec)) return NotFound(path_or_dir + ": no such file or directory");
  if (!fs::is_directory(path_or_dir, ec)) return path_or_dir;
  for (const char* name : {"trees.jsonl", "trees.jsonl.gz", "trees.jsonl.zst"}) {
    fs::path p = fs::path(path_or_dir) / name;
    if (fs::exists(p, ec)) return p.string();
  }
  return NotFound(path_or_dir + ": directory has no trees.jsonl(.gz|.zst); run truffld-merge first");
}

Status TreeReader::Read(const std::string& path_or_dir) {
  auto path = ResolveTreesPath(path_or_dir);
  if (!path.ok()) return path.status();
  auto reader = LineReader::Open(*path);
  if (!reader.ok()) return reader.status();
  std::string_view line;
  while ((*reader)->Next(&line)) ParseLine(line, (*reader)->Where());
  for (const auto& w : (*reader)->warnings()) {
    ++stats_.warnings;
    if (stats_.problems.size() < ReadStats::kMaxProblems) stats_.problems.push_back(w.message);
  }
  return (*reader)->status();
}

InstanceTable TreeReader::Finish() {
  InstanceTable t;
  AddOutsideTime(impl_->buckets, impl_->outside_time, &impl_->strings, &stats_);
  t.strings = std::move(impl_->strings);
  // A horizontal bucket created only by graph-replayed comm work (no horizontal tree was read)
  // borrows the step description of its vertical counterpart.
  for (auto& [key, b] : impl_->buckets) {
    if (b.info.trees != 0 || !key.horizontal) continue;
    StepKey v = key;
    v.horizontal = false;
    auto it = impl_->buckets.find(v);
    if (it == impl_->buckets.end()) continue;
    b.info = it->second.info;
    b.info.view = View::kHorizontal;
    b.info.trees = 0;
    b.info.graph_launches = 0;
    b.domains = it->second.domains;
  }
  // Regime: a step whose vertical tree launches a CUDA graph replays most of its work inside
  // the graph; both views of that (rank, step) share the vertical tree's answer.
  for (auto& [key, b] : impl_->buckets) {
    StepKey v = key;
    v.horizontal = false;
    auto it = impl_->buckets.find(v);
    const int launches = it == impl_->buckets.end() ? 0 : it->second.info.graph_launches;
    b.info.regime = launches > 0 ? Regime::kGraph : Regime::kEager;
  }
  size_t instances = 0;
  for (const auto& [key, b] : impl_->buckets) instances += b.instances.size() + b.outside.size();
  auto hash_of = [&](uint32_t id) { return impl_->TextHash(id, t.strings); };
  t.Reserve(instances);  // each column allocated once
  for (auto& [key, b] : impl_->buckets) {
    auto& ins = b.instances;
    if (key.horizontal && ins.empty() && b.outside.empty()) {  // no communication: nothing to judge
      ++stats_.empty_horizontal;
      continue;
    }
    SortByStart(&ins, b.outside.size());
    b.info.nvtx_domains.assign(b.domains.begin(), b.domains.end());
    b.info.first_instance = static_cast<uint32_t>(t.size());
    b.info.instance_count = static_cast<uint32_t>(ins.size());
    const double phase = PhaseCode(b.info.phase);
    for (auto& p : ins) p.f[kPhaseCode] = phase;
    std::vector<int32_t> parents = detail::NestInstances(ins);
    const std::vector<int32_t> before = detail::PrecedingTopLevel(ins, parents);
    for (size_t k = 0; k < ins.size(); ++k) {
      const uint64_t ctx = before[k] < 0 ? 0 : hash_of(ins[static_cast<size_t>(before[k])].family);
      ins[k].detail.signature = MixHash(ins[k].detail.signature, ctx);
      const PendingInstance& p = ins[k];
      uint64_t pos = MixHash(hash_of(p.layer), hash_of(p.family));
      pos = MixHash(pos, p.parent == kNoString ? 0 : hash_of(p.parent));
      ins[k].detail.position = MixHash(pos, ctx);
    }
    // The time no operator covers comes last, outside the nesting and the signatures' context.
    for (PendingInstance& p : b.outside) {
      p.f[kPhaseCode] = phase;
      ins.push_back(std::move(p));
      parents.push_back(-1);
    }
    b.info.instance_count = static_cast<uint32_t>(ins.size());
    t.steps.push_back(b.info);
    for (size_t k = 0; k < ins.size(); ++k) {
      auto& p = ins[k];
      t.Add(p.family, p.layer, p.parent, p.start, p.end, p.f);
      p.detail.parent = parents[k] < 0 ? -1 : static_cast<int32_t>(b.info.first_instance) + parents[k];
      t.detail.push_back(p.detail);
      t.kernels.push_back(std::move(p.kernels));
      t.api_calls.push_back(std::move(p.apis));
    }
  }
  impl_->buckets.clear();
  impl_->strings = StringTable();
  impl_->text_hash.clear();
  impl_->hashed.clear();
  return t;
}

}  // namespace truffld::diagnose
