// run_stats.json both ways, and the shared reductions (see truffld/run_stats.h).
#include "truffld/run_stats.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "truffld/json_get.h"

namespace truffld {

size_t NearestRankIndex(size_t n, double p) {
  // The smallest 1-based rank k with k >= p * n, compared in double as the SQL does.
  const double target = p * static_cast<double>(n);
  size_t k = static_cast<size_t>(std::max(1.0, std::ceil(target)));
  while (k > 1 && static_cast<double>(k - 1) >= target) --k;
  while (k < n && static_cast<double>(k) < target) ++k;
  return std::min(k, n) - 1;
}

int64_t NearestRank(const std::vector<int64_t>& sorted, double p) { return sorted[NearestRankIndex(sorted.size(), p)]; }

void SummariseRankIdle(RunStats* out) {
  out->rank_idle.clear();
  for (const StepIdle& s : out->step_idle) {
    if (out->rank_idle.empty() || out->rank_idle.back().rank != s.rank) {
      out->rank_idle.push_back(RankIdle{s.rank, 0, 0, 0, 0, 1.0, 0.0});
    }
    RankIdle& r = out->rank_idle.back();
    ++r.steps;
    r.duration_ns += s.duration_ns;
    r.busy_ns += s.busy_ns;
    r.min_step_idle = std::min(r.min_step_idle, s.idle_share);
    r.max_step_idle = std::max(r.max_step_idle, s.idle_share);
  }
  for (RankIdle& r : out->rank_idle) {
    r.idle_share = r.duration_ns > 0 ? 1.0 - static_cast<double>(r.busy_ns) / static_cast<double>(r.duration_ns) : 0.0;
  }
}

std::string RunStatsJson(const RunStats& s) {
  using Json = nlohmann::ordered_json;  // "schema" first: truffld-merge recognises the file by it
  auto rank = [](const std::optional<int64_t>& r) { return r ? Json(*r) : Json(nullptr); };
  Json j = {{"schema", kStatsSummarySchema}, {"kernels", s.kernels}, {"kernel_total_ns", s.kernel_total_ns}};
  Json& ks = j["kernel_summary"] = Json::array();
  for (const KernelSummary& k : s.kernel_summary) {
    ks.push_back({{"name", k.name}, {"count", k.count}, {"total_ns", k.total_ns}, {"avg_ns", k.avg_ns},
                  {"min_ns", k.min_ns}, {"max_ns", k.max_ns}, {"share", k.share}});
  }
  Json& si = j["step_idle"] = Json::array();
  for (const StepIdle& st : s.step_idle) {
    si.push_back({{"rank", rank(st.rank)}, {"step_index", st.step_index}, {"duration_ns", st.duration_ns},
                  {"busy_ns", st.busy_ns}, {"idle_share", st.idle_share}});
  }
  Json& ri = j["rank_idle"] = Json::array();
  for (const RankIdle& r : s.rank_idle) {
    ri.push_back({{"rank", rank(r.rank)}, {"steps", r.steps}, {"duration_ns", r.duration_ns}, {"busy_ns", r.busy_ns},
                  {"idle_share", r.idle_share}, {"min_step_idle_share", r.min_step_idle},
                  {"max_step_idle_share", r.max_step_idle}});
  }
  Json& ll = j["launch_latency"] = Json::array();
  for (const LaunchLatency& l : s.launch_latency) {
    ll.push_back({{"api", l.api}, {"count", l.count}, {"min_ns", l.min_ns}, {"p50_ns", l.p50_ns},
                  {"p90_ns", l.p90_ns}, {"p99_ns", l.p99_ns}, {"max_ns", l.max_ns},
                  {"p50_after_end_ns", l.p50_after_end_ns}});
  }
  Json& ov = j["overlap"] = Json::array();
  for (const RankOverlap& r : s.overlap) {
    ov.push_back({{"rank", rank(r.rank)}, {"compute_ns", r.compute_ns}, {"comm_ns", r.comm_ns},
                  {"overlap_ns", r.overlap_ns}, {"overlap_share", r.overlap_share}});
  }
  return j.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

namespace {

using Json = nlohmann::json;

// Reads one array member of `j` with `item` per element; `where` names the file.
template <typename F>
Status EachItem(const Json& j, const char* key, const std::string& where, F item) {
  auto arr = json::GetArray(j, key, where);
  if (!arr.ok()) return arr.status();
  if (*arr == nullptr) return InvalidArgument(where + ": \"" + key + "\" is missing");
  for (size_t i = 0; i < (*arr)->size(); ++i) {
    const Json& e = (**arr)[i];
    const std::string at = where + ": " + key + "[" + std::to_string(i) + "]";
    if (!e.is_object()) return InvalidArgument(at + " must be an object");
    TRUFFLD_RETURN_IF_ERROR(item(e, at));
  }
  return Status::Ok();
}

Result<std::optional<int64_t>> RankOf(const Json& e, const std::string& at) {
  auto it = e.find("rank");
  if (it == e.end() || it->is_null()) return std::optional<int64_t>();
  auto r = json::GetInt(e, "rank", 0, at);
  if (!r.ok()) return r.status();
  return std::optional<int64_t>(*r);
}

}  // namespace

#define TRUFFLD_GET(var, expr) \
  auto var##_r = (expr);       \
  if (!var##_r.ok()) return var##_r.status();

Result<RunStats> ParseRunStatsJson(std::string_view text, const std::string& path) {
  const Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(path + ": not a JSON object");
  TRUFFLD_GET(schema, json::GetString(j, "schema", "", path));
  if (*schema_r != kStatsSummarySchema)
    return InvalidArgument(path + ": \"schema\" must be " + kStatsSummarySchema + ", not \"" + *schema_r + "\"");
  RunStats s;
  TRUFFLD_GET(kernels, json::GetInt(j, "kernels", 0, path));
  TRUFFLD_GET(total, json::GetInt(j, "kernel_total_ns", 0, path));
  s.kernels = *kernels_r, s.kernel_total_ns = *total_r;
  TRUFFLD_RETURN_IF_ERROR(EachItem(j, "kernel_summary", path, [&](const Json& e, const std::string& at) -> Status {
    KernelSummary k;
    TRUFFLD_GET(name, json::GetString(e, "name", "", at));
    TRUFFLD_GET(count, json::GetInt(e, "count", 0, at));
    TRUFFLD_GET(tot, json::GetInt(e, "total_ns", 0, at));
    TRUFFLD_GET(lo, json::GetInt(e, "min_ns", 0, at));
    TRUFFLD_GET(hi, json::GetInt(e, "max_ns", 0, at));
    TRUFFLD_GET(avg, json::GetNumber(e, "avg_ns", 0, at));
    TRUFFLD_GET(share, json::GetNumber(e, "share", 0, at));
    s.kernel_summary.push_back(KernelSummary{*name_r, *count_r, *tot_r, *lo_r, *hi_r, *avg_r, *share_r});
    return Status::Ok();
  }));
  TRUFFLD_RETURN_IF_ERROR(EachItem(j, "step_idle", path, [&](const Json& e, const std::string& at) -> Status {
    TRUFFLD_GET(rank, RankOf(e, at));
    TRUFFLD_GET(step, json::GetInt(e, "step_index", 0, at));
    TRUFFLD_GET(dur, json::GetInt(e, "duration_ns", 0, at));
    TRUFFLD_GET(busy, json::GetInt(e, "busy_ns", 0, at));
    TRUFFLD_GET(idle, json::GetNumber(e, "idle_share", 0, at));
    s.step_idle.push_back(StepIdle{*rank_r, *step_r, *dur_r, *busy_r, *idle_r});
    return Status::Ok();
  }));
  SummariseRankIdle(&s);
  TRUFFLD_RETURN_IF_ERROR(EachItem(j, "launch_latency", path, [&](const Json& e, const std::string& at) -> Status {
    LaunchLatency l;
    TRUFFLD_GET(api, json::GetString(e, "api", "", at));
    l.api = *api_r;
    int64_t* fields[] = {&l.count, &l.min_ns, &l.p50_ns, &l.p90_ns, &l.p99_ns, &l.max_ns, &l.p50_after_end_ns};
    const char* keys[] = {"count", "min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns", "p50_after_end_ns"};
    for (size_t i = 0; i < 7; ++i) {
      TRUFFLD_GET(v, json::GetInt(e, keys[i], 0, at));
      *fields[i] = *v_r;
    }
    s.launch_latency.push_back(std::move(l));
    return Status::Ok();
  }));
  TRUFFLD_RETURN_IF_ERROR(EachItem(j, "overlap", path, [&](const Json& e, const std::string& at) -> Status {
    TRUFFLD_GET(rank, RankOf(e, at));
    TRUFFLD_GET(c, json::GetInt(e, "compute_ns", 0, at));
    TRUFFLD_GET(m, json::GetInt(e, "comm_ns", 0, at));
    TRUFFLD_GET(o, json::GetInt(e, "overlap_ns", 0, at));
    TRUFFLD_GET(share, json::GetNumber(e, "overlap_share", 0, at));
    s.overlap.push_back(RankOverlap{*rank_r, *c_r, *m_r, *o_r, *share_r});
    return Status::Ok();
  }));
  return s;
}

#undef TRUFFLD_GET

}  // namespace truffld
