// step_features.jsonl: per (rank, step) workload, costs and verdict (see step_features.h).
#include "report/step_features.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <utility>

#include "peer/stage.h"

namespace truffld::diagnose {
namespace {

nlohmann::json OrNull(int64_t v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); }

// Per vertical unit: its family rows (observed and expected cost per metric).
std::vector<std::vector<const TestRow*>> FamilyRowsByUnit(const InstanceTable& t, const PeerStageResult& r) {
  std::vector<std::vector<const TestRow*>> by_unit(t.steps.size());
  for (const TestRow& row : r.rows) {
    if (row.instance != kFamilyRow || row.unit >= t.steps.size()) continue;
    if (t.steps[row.unit].view != View::kVertical) continue;
    // The device idle time is not a cost of the step's work (its "host" column is no host time).
    if (IsDeviceIdleFamily(t.strings, row.family)) continue;
    by_unit[row.unit].push_back(&row);
  }
  return by_unit;
}

// Per unit: ns from the end of the same rank's previous vertical step to its start (-1: first).
std::vector<int64_t> GapsBetweenSteps(const InstanceTable& t) {
  std::map<int64_t, std::vector<uint32_t>> by_rank;
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    if (t.steps[u].view == View::kVertical) by_rank[t.steps[u].rank.value_or(-1)].push_back(u);
  }
  std::vector<int64_t> gap(t.steps.size(), -1);
  for (auto& [rank, units] : by_rank) {
    std::sort(units.begin(), units.end(), [&](uint32_t a, uint32_t b) {
      return t.steps[a].start_ns != t.steps[b].start_ns ? t.steps[a].start_ns < t.steps[b].start_ns
                                                         : t.steps[a].step_index < t.steps[b].step_index;
    });
    for (size_t k = 1; k < units.size(); ++k) {
      gap[units[k]] = std::max<int64_t>(0, t.steps[units[k]].start_ns - t.steps[units[k - 1]].end_ns);
    }
  }
  return gap;
}

nlohmann::json Families(const InstanceTable& t, std::vector<const TestRow*> rows, size_t top) {
  std::stable_sort(rows.begin(), rows.end(), [](const TestRow* a, const TestRow* b) { return a->observed > b->observed; });
  if (rows.size() > top) rows.resize(top);
  nlohmann::json out = nlohmann::json::array();
  for (const TestRow* row : rows) {
    nlohmann::json f = {{"family", t.strings.Get(row->family)}, {"metric", MetricName(row->metric)},
                        {"observed_ns", std::llround(row->observed)}};
    f["expected_ns"] = std::isnan(row->effective_expected) ? nlohmann::json(nullptr)
                                                           : nlohmann::json(std::llround(row->effective_expected));
    out.push_back(std::move(f));
  }
  return out;
}

// The (rank, step)'s collectives, in both views (collectives are mostly in the horizontal one):
// time spent waiting for the last participant to enter, and the transfers.
void AddComm(const InstanceTable& t, const PeerStageResult& r, const std::vector<uint32_t>& units, nlohmann::json* j) {
  double wait = 0, transfer = 0;
  int collectives = 0;
  for (uint32_t u : units) {
    const StepInfo& st = t.steps[u];
    const uint32_t end = std::min<uint32_t>(st.first_instance + st.instance_count, static_cast<uint32_t>(r.comm.size()));
    for (uint32_t i = st.first_instance; i < end; ++i) {
      const CommTiming& c = r.comm[i];
      if (c.participants == 0) continue;
      ++collectives;
      wait += c.wait_ns;
      transfer += c.transfer_ns;
    }
  }
  (*j)["collectives"] = collectives;
  (*j)["comm_wait_ns"] = std::llround(wait);
  (*j)["comm_transfer_ns"] = std::llround(transfer);
}

}  // namespace

std::vector<nlohmann::json> BuildStepFeatures(const InstanceTable& t, const PeerStageResult& r,
                                              const std::vector<StepDiagnosis>& d,
                                              const StepFeatureOptions& o) {
  const auto rows = FamilyRowsByUnit(t, r);
  const auto gaps = GapsBetweenSteps(t);
  std::map<std::pair<int64_t, int64_t>, std::vector<uint32_t>> views;  // (rank, step) -> its units
  for (uint32_t u = 0; u < t.steps.size(); ++u) views[{t.steps[u].rank.value_or(-1), t.steps[u].step_index}].push_back(u);
  std::vector<nlohmann::json> lines;
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    const StepInfo& st = t.steps[u];
    if (st.view != View::kVertical) continue;
    nlohmann::json j;
    j["schema"] = "truffld.step_features/1";
    j["replica"] = o.replica.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.replica);
    j["host"] = st.host;
    j["rank"] = st.rank ? nlohmann::json(*st.rank) : nlohmann::json(nullptr);
    j["step_index"] = st.step_index;
    j["phase"] = st.phase;
    j["batch"] = st.batch >= 0 ? st.batch : static_cast<int64_t>(st.requests.size());
    j["tokens"] = OrNull(st.tokens);
    j["context"] = OrNull(st.context);
    j["start_ns"] = st.start_ns;
    j["step_ns"] = st.end_ns - st.start_ns;
    j["gap_ns"] = OrNull(gaps[u]);
    AddComm(t, r, views[{st.rank.value_or(-1), st.step_index}], &j);
    j["families"] = Families(t, rows[u], o.top_families);
    const bool matched = u < d.size() && d[u].evidence.step_index == st.step_index && d[u].evidence.view == st.view;
    j["verdict"] = matched ? nlohmann::json(VerdictName(d[u].label)) : nlohmann::json(nullptr);
    nlohmann::json faulty = nlohmann::json::array();
    if (matched) {
      for (const auto& f : d[u].faulty) faulty.push_back(f.family);
    }
    j["faulty"] = faulty;
    lines.push_back(std::move(j));
  }
  return lines;
}

Status WriteStepFeatures(const std::string& path, const std::vector<nlohmann::json>& lines, size_t* bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError(path + ": cannot open for writing");
  size_t n = 0;
  for (const auto& j : lines) {
    const std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out << s << '\n';
    n += s.size() + 1;
  }
  out.flush();
  if (!out) return IoError(path + ": write failed");
  if (bytes) *bytes = n;
  return Status::Ok();
}

}  // namespace truffld::diagnose
