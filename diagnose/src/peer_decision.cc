// Step verdicts: Bonferroni within a unit, Benjamini-Hochberg across units (see peer_decision.h).
#include "truffld/diagnose/peer_decision.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "truffld/diagnose/blame.h"
#include "truffld/diagnose/peer_scoring.h"

namespace truffld::diagnose {

const char* VerdictName(Verdict v) noexcept {
  switch (v) {
    case Verdict::kNormal: return "normal";
    case Verdict::kAbnormal: return "abnormal";
    case Verdict::kInsufficient: return "insufficient_evidence";
  }
  return "unknown";
}

double BenjaminiHochbergThreshold(std::vector<double> p, double alpha) {
  std::sort(p.begin(), p.end());
  const double n = static_cast<double>(p.size());
  double thr = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    if (p[k] <= alpha * static_cast<double>(k + 1) / n) thr = p[k];
  }
  return thr;
}

namespace {

std::string InsufficientReason(const InstanceTable& t, uint32_t u, const UnitVerdict& v) {
  const StepInfo& s = t.steps[u];
  if (s.instance_count == 0) return "no operator instances in this view";
  if (v.rows == 0) return "no operator with host or device timing to compare";
  std::string r = "no peers that did the same work: no tensor-parallel rank ran this step's "
                  "operators, and fewer than 3 steps of similar workload on this rank ran them";
  if (v.with_source[static_cast<int>(Source::kLayer)] > 0) {
    r += " (only its own layers can be compared, which cannot tell a slow step from a different one)";
  }
  return r;
}

}  // namespace

double RowRatio(const TestRow& row) {
  const double e = BestExpected(row, nullptr);
  return std::isnan(e) ? 0.0 : (row.observed + 1.0) / (std::max(0.0, e) + 1.0);
}

DecisionResult DecideUnits(const InstanceTable& t, const std::vector<TestRow>& rows, const DecisionOptions& o) {
  DecisionResult d;
  d.alpha = o.alpha;
  const double alpha = o.alpha;
  d.units.resize(t.steps.size());
  std::vector<double> min_p(t.steps.size(), 1.0);
  // Per (unit, family): the two smallest instance-row p-values.
  std::unordered_map<uint64_t, std::pair<double, double>> two;
  for (const TestRow& r : rows) {
    UnitVerdict& v = d.units[r.unit];
    ++v.rows;
    for (int s = 0; s < kNumSources; ++s) v.with_source[static_cast<size_t>(s)] += r.Has(static_cast<Source>(s));
    if (!Tested(r)) continue;
    ++v.tests;
    if (r.instance == kFamilyRow || RowRatio(r) >= o.SingleRatio(r)) {
      min_p[r.unit] = std::min(min_p[r.unit], r.p_value);
    }
    if (r.instance != kFamilyRow) {
      auto [it, fresh] = two.emplace((uint64_t{r.unit} << 32) | r.family, std::make_pair(r.p_value, 1.0));
      if (!fresh) {
        auto& [a, b] = it->second;
        if (r.p_value < a) { b = a; a = r.p_value; } else if (r.p_value < b) { b = r.p_value; }
      }
    }
  }
  for (const auto& [key, ab] : two) {
    const uint32_t u = static_cast<uint32_t>(key >> 32);
    min_p[u] = std::min(min_p[u], ab.second);
  }
  std::vector<double> per_view[2];
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    UnitVerdict& v = d.units[u];
    const int view = t.steps[u].view == "horizontal" ? 1 : 0;
    if (v.tests == 0) {
      v.verdict = Verdict::kInsufficient;
      v.reason = InsufficientReason(t, u, v);
      ++d.insufficient[view];
      continue;
    }
    v.p_value = std::min(1.0, min_p[u] * static_cast<double>(v.tests));
    per_view[view].push_back(v.p_value);
    ++d.judged[view];
  }
  for (int view = 0; view < 2; ++view) d.threshold[view] = BenjaminiHochbergThreshold(per_view[view], alpha);
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    UnitVerdict& v = d.units[u];
    if (v.verdict == Verdict::kInsufficient && v.tests == 0) continue;
    const int view = t.steps[u].view == "horizontal" ? 1 : 0;
    const bool flagged = d.threshold[view] > 0 && v.p_value <= d.threshold[view];
    v.verdict = flagged ? Verdict::kAbnormal : Verdict::kNormal;
    d.flagged[view] += flagged;
  }
  return d;
}

}  // namespace truffld::diagnose
