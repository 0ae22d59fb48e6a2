// Deepest-cause blame with excess time (see blame.h).
#include "peer/blame.h"

#include "peer/decision.h"
#include "peer/scoring.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace truffld::diagnose {

double BestExpected(const TestRow& row, PeerSource* basis) {
  if (!std::isnan(row.effective_expected)) {
    if (basis) *basis = row.basis;
    return row.effective_expected;
  }
  for (PeerSource s : {PeerSource::kTp, PeerSource::kTime, PeerSource::kLayer}) {
    if (row.Has(s)) {
      if (basis) *basis = s;
      return row.expected[static_cast<int>(s)];
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

namespace {

struct FamilyTally {
  double inst_excess[kMetricCount] = {0, 0}, inst_observed[kMetricCount] = {0, 0};
  int significant[kMetricCount] = {0, 0};
  const TestRow* family_row[kMetricCount] = {nullptr, nullptr};   // significant family row
  const TestRow* strongest[kMetricCount] = {nullptr, nullptr};    // most significant row
  double p = 1;
};

double Excess(const TestRow& r) {
  const double e = BestExpected(r, nullptr);
  return std::isnan(e) ? 0.0 : std::max(0.0, r.observed - e);
}

}  // namespace

namespace {

using RowList = std::vector<const TestRow*>;

// Instance rows that a significant descendant explains (same metric, at least half the excess).
std::unordered_set<const TestRow*> ExplainedByDescendants(const InstanceTable& t, const RowList& sig) {
  std::unordered_map<uint64_t, const TestRow*> by_instance;  // (instance, metric) -> row
  for (const TestRow* r : sig) {
    if (r->instance != kFamilyRow) by_instance[uint64_t{r->instance} * 2 + static_cast<uint64_t>(r->metric)] = r;
  }
  std::unordered_set<const TestRow*> explained;
  for (const TestRow* r : sig) {
    if (r->instance == kFamilyRow || t.detail.empty()) continue;
    for (int32_t a = t.detail[r->instance].parent; a >= 0; a = t.detail[static_cast<size_t>(a)].parent) {
      auto it = by_instance.find(uint64_t(a) * 2 + static_cast<uint64_t>(r->metric));
      if (it != by_instance.end() && Excess(*r) >= 0.5 * Excess(*it->second)) explained.insert(it->second);
    }
  }
  return explained;
}

std::map<uint32_t, FamilyTally> TallyFamilies(const RowList& sig, const std::unordered_set<const TestRow*>& explained) {
  std::map<uint32_t, FamilyTally> fam;
  for (const TestRow* r : sig) {
    FamilyTally& f = fam[r->family];
    const int m = static_cast<int>(r->metric);
    f.p = std::min(f.p, r->p_value);
    if (!f.strongest[m] || r->p_value < f.strongest[m]->p_value) f.strongest[m] = r;
    if (r->instance == kFamilyRow) {
      f.family_row[m] = r;
    } else if (!explained.count(r)) {
      f.inst_excess[m] += Excess(*r);
      f.inst_observed[m] += r->observed;
      ++f.significant[m];
    }
  }
  return fam;
}

// The family's blame from its tally: the cost (host or device) with the larger excess, measured
// on its family row when that row shows more excess than its instances together. False when the
// family has no counted excess.
bool ToBlamed(const InstanceTable& t, const StepInfo& st, uint32_t family, const FamilyTally& f, BlamedFamily* b) {
  b->family = family;
  b->p_value = f.p;
  double best = -1;
  for (int m = 0; m < kMetricCount; ++m) {
    const double from_rows = f.inst_excess[m];
    const double from_family = f.family_row[m] ? Excess(*f.family_row[m]) : 0.0;
    const double excess = std::max(from_rows, from_family);
    if (excess <= best || (f.significant[m] == 0 && !f.family_row[m])) continue;
    best = excess;
    const bool by_family = from_family >= from_rows && f.family_row[m];
    const TestRow* basis_row = by_family ? f.family_row[m] : f.strongest[m];
    b->metric = static_cast<Metric>(m);
    b->excess_ns = excess;
    b->observed_ns = by_family ? f.family_row[m]->observed : f.inst_observed[m];
    b->expected_ns = std::max(0.0, b->observed_ns - excess);
    b->significant = f.significant[m];
    BestExpected(*basis_row, &b->basis);
    for (size_t s = 0; s < kPeerSourceCount; ++s) {
      if (!basis_row->Has(static_cast<PeerSource>(s))) continue;
      const double e = basis_row->expected[s];
      b->ratio[s] = e > 0 ? basis_row->observed / e : 0.0;
      b->peers[s] = basis_row->peers[s];
    }
  }
  if (best < 0) return false;
  const int other = 1 - static_cast<int>(b->metric);
  b->other_metric_normal = f.significant[other] == 0 && !f.family_row[other];
  for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) {
    if (t.family[i] != family) continue;
    ++b->instances;
    b->layer = t.layer[i];
  }
  b->share = std::min(1.0, b->excess_ns / static_cast<double>(std::max<int64_t>(1, st.end_ns - st.start_ns)));
  return true;
}

// Drops wrappers (a family whose excess a child family explains, by the instances' parent
// links) and orders by excess; o.top_m > 0 keeps only that many.
std::vector<BlamedFamily> Finalize(const InstanceTable& t, const StepInfo& st, std::vector<BlamedFamily> blamed,
                                   const BlameOptions& o) {
  std::vector<BlamedFamily> kept;
  for (size_t a = 0; a < blamed.size(); ++a) {
    bool wrapper = false;
    for (size_t c = 0; c < blamed.size() && !wrapper; ++c) {
      if (a == c || blamed[c].metric != blamed[a].metric || blamed[c].excess_ns < 0.5 * blamed[a].excess_ns) continue;
      for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count && !wrapper; ++i) {
        wrapper = t.family[i] == blamed[c].family && t.parent[i] == blamed[a].family;
      }
    }
    if (!wrapper) kept.push_back(blamed[a]);
  }
  std::sort(kept.begin(), kept.end(), [](const BlamedFamily& a, const BlamedFamily& b) {
    if (a.excess_ns != b.excess_ns) return a.excess_ns > b.excess_ns;
    return a.p_value < b.p_value;
  });
  std::vector<BlamedFamily> out;
  for (const auto& b : kept) {
    if (o.top_m > 0 && static_cast<int>(out.size()) >= o.top_m) break;
    if (!out.empty() && b.excess_ns < o.min_relative * kept[0].excess_ns) continue;
    out.push_back(b);
  }
  return out;
}

}  // namespace

std::vector<std::vector<BlamedFamily>> BlameUnits(const InstanceTable& t, const std::vector<TestRow>& rows,
                                                  const DecisionResult& d, const BlameOptions& o) {
  std::vector<std::vector<BlamedFamily>> out(t.steps.size());
  std::vector<RowList> sig(t.steps.size());  // supported significant rows (decision.h)
  for (uint32_t r = 0; r < rows.size(); ++r) {
    if (Significant(d, t, rows, r)) sig[rows[r].unit].push_back(&rows[r]);
  }
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    if (sig[u].empty()) continue;
    const auto tallies = TallyFamilies(sig[u], ExplainedByDescendants(t, sig[u]));
    std::vector<BlamedFamily> blamed;
    for (const auto& [family, f] : tallies) {
      BlamedFamily b;
      if (ToBlamed(t, t.steps[u], family, f, &b)) blamed.push_back(b);
    }
    out[u] = Finalize(t, t.steps[u], std::move(blamed), o);
  }
  return out;
}

std::vector<std::vector<BlamedFamily>> IdleCauseCandidates(const InstanceTable& t, const std::vector<TestRow>& rows,
                                                           const DecisionResult& d,
                                                           const std::vector<std::vector<BlamedFamily>>& blame) {
  std::vector<std::vector<BlamedFamily>> out(t.steps.size());
  std::vector<char> idle(t.steps.size(), 0);
  for (uint32_t u = 0; u < t.steps.size() && u < blame.size(); ++u)
    for (const BlamedFamily& b : blame[u]) idle[u] = idle[u] || IsDeviceIdleFamily(t.strings, b.family);
  std::vector<RowList> cand(t.steps.size());
  std::vector<std::set<uint32_t>> blamed(t.steps.size());
  for (uint32_t u = 0; u < t.steps.size(); ++u)
    for (const BlamedFamily& b : idle[u] ? blame[u] : std::vector<BlamedFamily>{}) blamed[u].insert(b.family);
  for (uint32_t r = 0; r < rows.size(); ++r) {
    const TestRow& row = rows[r];
    if (!idle[row.unit] || row.metric != Metric::kHost || !Tested(row) || blamed[row.unit].count(row.family)) continue;
    if (Excess(row) <= 0 || row.p_value * static_cast<double>(d.units[row.unit].tests) > d.alpha) continue;
    cand[row.unit].push_back(&row);
  }
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    if (cand[u].empty()) continue;
    for (const auto& [family, f] : TallyFamilies(cand[u], ExplainedByDescendants(t, cand[u]))) {
      BlamedFamily b;
      if (ToBlamed(t, t.steps[u], family, f, &b)) out[u].push_back(b);
    }
  }
  return out;
}

}  // namespace truffld::diagnose
