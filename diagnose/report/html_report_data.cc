// What report.html shows beyond the diagnoses: the run's calibration, the straggler table and
// log-binned cost histograms of the blamed families (see html_report.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "report/html_report.h"
#include "report/html_report_parts.h"
#include "peer/stage.h"
#include "report/output.h"

namespace truffld::diagnose {
namespace {

CostHistogram Named(const std::string& view, const std::string& family, const std::string& metric) {
  CostHistogram h;
  h.view = view;
  h.family = family;
  h.metric = metric;
  return h;
}

// Two passes over the values: the range, then the counts.
class HistogramSet {
 public:
  explicit HistogramSet(std::vector<CostHistogram>* h) : h_(h) {
    lo_.assign(h->size(), INFINITY);
    hi_.assign(h->size(), 0.0);
  }
  void Range(uint32_t k, double ns) {
    ns = std::max(ns, 1.0);
    lo_[k] = std::min(lo_[k], ns);
    hi_[k] = std::max(hi_[k], ns);
  }
  void FixRanges() {
    for (size_t k = 0; k < h_->size(); ++k) {
      CostHistogram& c = (*h_)[k];
      c.lo_ns = std::isfinite(lo_[k]) ? lo_[k] : 1.0;
      c.hi_ns = std::max(c.lo_ns, hi_[k]);
      c.counts.assign(CostHistogram::kBins, 0);
    }
  }
  void Count(uint32_t k, double ns) {
    CostHistogram& c = (*h_)[k];
    ++c.counts[static_cast<size_t>(c.Bin(ns))];
    ++c.total;
  }
  void Finish() {
    for (CostHistogram& c : *h_) {
      uint64_t seen = 0;
      for (int b = 0; b < CostHistogram::kBins; ++b) {
        seen += c.counts[static_cast<size_t>(b)];
        if (2 * seen >= c.total && c.total > 0) {
          const double step = std::log(c.hi_ns / c.lo_ns) / CostHistogram::kBins;
          c.median_ns = c.lo_ns * std::exp(step * (b + 0.5));
          break;
        }
      }
    }
  }

 private:
  std::vector<CostHistogram>* h_;
  std::vector<double> lo_, hi_;
};

void FillHistograms(const InstanceTable& t, const PeerStageResult& r, const std::vector<StepDiagnosis>& d,
                    ReportRunData* run);

}  // namespace

int CostHistogram::Bin(double ns) const {
  if (!(hi_ns > lo_ns)) return 0;
  const double x = std::log(std::max(ns, lo_ns) / lo_ns) / std::log(hi_ns / lo_ns);
  return std::clamp(static_cast<int>(x * kBins), 0, kBins - 1);
}

ReportRunData BuildReportRunData(const InstanceTable& t, const PeerStageResult& r,
                                 const std::vector<StepDiagnosis>& d) {
  ReportRunData out;
  out.from_peer = true;
  out.alpha = r.decision.alpha;
  for (int v = 0; v < 2; ++v) {
    out.threshold[v] = r.decision.views[v].threshold;
    out.judged[v] = r.decision.views[v].judged;
    out.flagged[v] = r.decision.views[v].flagged;
    out.insufficient[v] = r.decision.views[v].insufficient;
    out.null_centre[v] = r.decision.views[v].null_centre;
    out.null_scale[v] = r.decision.views[v].null_scale;
    out.best_possible_p[v] = r.decision.views[v].best_possible_p;
    out.null_blind[v] = r.decision.views[v].single_step_blind;
    out.warmup_units[v] = r.warmup_tally.material[v];
    out.warmup_ns[v] = r.warmup_tally.excess_ns[v];
  }
  out.timer_resolution_ns = r.timer_resolution_ns;
  out.min_impact_share = r.decision.min_impact_share;
  out.long_step_ratio = r.decision.long_step_ratio;
  for (const RunFinding& f : r.findings) out.run_findings.push_back(f.sentence);
  for (const PersistentStraggler& p : r.stragglers.persistent) out.run_findings.push_back(PersistentStragglerSentence(p));
  for (const PipelineImbalance& p : r.pipelines) out.run_findings.push_back(PipelineImbalanceSentence(p));
  for (const SlowRegime& g : r.slow_regimes) out.run_findings.push_back(g.sentence);
  for (const StragglerRow& s : r.stragglers.stragglers) {
    ReportRunData::Straggler row{s.rank, s.step_index, s.caused_ns, s.step_ns, s.last_in, s.collectives, 0,
                                 StragglerCause(t, r, s)};
    const size_t vu = StragglerVerticalUnit(t, s);
    row.explained = vu < r.blame.size() && !r.blame[vu].empty();
    if (s.group < r.groups.members.size()) {
      for (uint32_t u : r.groups.members[s.group]) {
        if (u < r.stragglers.waits.size() && r.stragglers.waits[u].waiting_on == s.rank) ++row.waiting_ranks;
      }
    }
    out.stragglers.push_back(row);
  }
  std::stable_sort(out.stragglers.begin(), out.stragglers.end(),
                   [](const auto& a, const auto& b) { return a.caused_ns > b.caused_ns; });
  if (d.size() == t.steps.size()) FillHistograms(t, r, d, &out);  // else: diagnoses of another table
  return out;
}

namespace {

// Histograms of the (view, family, metric) triples some abnormal unit blames, over every
// instance row, and each abnormal unit's own values.
void FillHistograms(const InstanceTable& t, const PeerStageResult& r, const std::vector<StepDiagnosis>& d,
                    ReportRunData* run) {
  ReportRunData& out = *run;
  std::map<std::tuple<std::string, std::string, std::string>, uint32_t> index;
  std::vector<bool> abnormal(d.size(), false);
  for (size_t u = 0; u < d.size(); ++u) {
    for (const FaultyOperator& f : d[u].faulty) {
      const std::string view = ViewName(d[u].evidence.view), metric = report::MetricText(f);
      auto key = std::make_tuple(view, f.family, metric);
      auto [it, fresh] = index.emplace(key, static_cast<uint32_t>(out.histograms.size()));
      if (fresh) out.histograms.push_back(Named(view, f.family, metric));
      out.unit_costs.push_back(UnitCosts{u, f.family, metric, it->second, {}});
      abnormal[u] = true;
    }
  }
  // Per interned family and metric: the histogram of each view (-1: none).
  std::vector<std::array<int64_t, 4>> slot(t.strings.size(), {-1, -1, -1, -1});
  std::unordered_map<std::string, uint32_t> family_id;
  for (uint32_t id = 0; id < t.strings.size(); ++id) family_id.emplace(t.strings.Get(id), id);
  for (const auto& [key, k] : index) {
    auto id = family_id.find(std::get<1>(key));
    const std::string& metric = std::get<2>(key);
    const bool known = metric == MetricName(Metric::kHost) || metric == MetricName(Metric::kDevice);
    if (id == family_id.end() || !known) continue;
    View view = View::kVertical;
    ParseView(std::get<0>(key), &view);
    const int v = ViewIndex(view);
    const int m = metric == MetricName(Metric::kDevice) ? 1 : 0;
    slot[id->second][static_cast<size_t>(v * 2 + m)] = k;
  }
  std::unordered_map<uint64_t, size_t> unit_slot;  // (unit, histogram) -> unit_costs index
  for (size_t i = 0; i < out.unit_costs.size(); ++i) {
    unit_slot.emplace(uint64_t{out.unit_costs[i].diagnosis} << 32 | out.unit_costs[i].histogram, i);
  }
  auto hist_of = [&](const TestRow& row) -> int64_t {
    if (row.instance == kFamilyRow || row.family >= slot.size()) return -1;
    const int v = ViewIndex(t.steps[row.unit].view);
    return slot[row.family][static_cast<size_t>(v * 2 + static_cast<int>(row.metric))];
  };
  HistogramSet set(&out.histograms);
  for (const TestRow& row : r.rows) {
    if (int64_t k = hist_of(row); k >= 0) set.Range(static_cast<uint32_t>(k), row.observed);
  }
  set.FixRanges();
  for (const TestRow& row : r.rows) {
    const int64_t k = hist_of(row);
    if (k < 0) continue;
    set.Count(static_cast<uint32_t>(k), row.observed);
    if (!abnormal[row.unit]) continue;
    auto it = unit_slot.find(uint64_t{row.unit} << 32 | static_cast<uint64_t>(k));
    if (it != unit_slot.end()) out.unit_costs[it->second].values_ns.push_back(row.observed);
  }
  set.Finish();
}

}  // namespace

ReportRunData ReportRunDataFromDiagnoses(const std::vector<StepDiagnosis>& d) {
  ReportRunData out;
  std::map<std::pair<std::string, std::string>, uint32_t> index;
  bool seen_view[2] = {false, false};
  for (size_t u = 0; u < d.size(); ++u) {
    const StepEvidence& e = d[u].evidence;
    const int v = ViewIndex(e.view);
    if (e.peer) {
      out.from_peer = true;
      out.alpha = e.peer->alpha;
      if (!seen_view[v]) {
        out.threshold[v] = e.peer->threshold;
        out.null_centre[v] = e.peer->null_centre;
        out.null_scale[v] = e.peer->null_scale;
        out.best_possible_p[v] = e.peer->best_possible_p;
        out.null_blind[v] = e.peer->null_blind;
      }
      out.long_step_ratio = e.peer->long_step_ratio;
      seen_view[v] = true;
    }
    out.flagged[v] += d[u].abnormal;
    const bool insufficient = d[u].label == Verdict::kInsufficient;
    out.insufficient[v] += insufficient;
    out.judged[v] += !insufficient;
    for (const FaultyOperator& f : d[u].faulty) {
      auto [it, fresh] = index.emplace(std::make_pair(ViewName(e.view), f.family), static_cast<uint32_t>(out.histograms.size()));
      if (fresh) out.histograms.push_back(Named(ViewName(e.view), f.family, "duration"));
      out.unit_costs.push_back(UnitCosts{u, f.family, "duration", it->second, {}});
    }
  }
  auto each_value = [&](auto&& fn) {
    for (const StepDiagnosis& s : d) {
      for (const FamilyEvidence& f : s.evidence.families) {
        auto it = index.find({ViewName(s.evidence.view), f.family});
        if (it != index.end()) fn(it->second, f.total_time_ns);
      }
    }
  };
  HistogramSet set(&out.histograms);
  each_value([&](uint32_t k, double ns) { set.Range(k, ns); });
  set.FixRanges();
  each_value([&](uint32_t k, double ns) { set.Count(k, ns); });
  set.Finish();
  for (UnitCosts& c : out.unit_costs) {
    for (const FamilyEvidence& f : d[c.diagnosis].evidence.families) {
      if (f.family == c.family) c.values_ns.push_back(static_cast<float>(f.total_time_ns));
    }
  }
  return out;
}

}  // namespace truffld::diagnose
