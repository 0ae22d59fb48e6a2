// Run findings (see run_patterns.h).
#include "peer/run_patterns.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "peer/format_ns.h"
#include "peer/impact.h"

namespace truffld::diagnose {
namespace {

struct Member {
  uint32_t unit;
  double excess, impact, share;
};

std::string Sentence(const InstanceTable& t, const RunFinding& f, const RunPatternOptions& o) {
  char b[512];
  std::string fams;
  bool idle = false;  // the device idle time is no host time: named apart
  for (size_t k = 0; k < f.families.size(); ++k) {
    fams += (k ? ", " : "") + t.strings.Get(f.families[k]);
    idle = idle || IsDeviceIdleFamily(t.strings, f.families[k]);
  }
  const std::string absorbed = AbsorbedWorthSaying(f.impact_ns, f.absorbed_ns)
                                   ? " (the device queue absorbed " + FormatNs(f.absorbed_ns) + " of it in all)"
                                   : "";
  std::snprintf(b, sizeof b,
                "%s%s view: %s beyond its peers in %d of %d judged steps (+%s to +%s, typically +%s; in %s%s), "
                "costing each step %.1f-%.1f%% of its time%s: how this run behaves, reported once; a step is "
                "flagged only when its excess is over %gx the typical one",
                f.rank >= 0 ? ("rank " + std::to_string(f.rank) + ", ").c_str() : "", ViewName(f.view),
                idle ? "host or device idle time" : "host time", f.units,
                f.judged, FormatNs(f.min_excess_ns).c_str(), FormatNs(f.max_excess_ns).c_str(), FormatNs(f.typical_excess_ns).c_str(),
                fams.c_str(), f.families.size() >= 3 ? ", ..." : "", 100 * f.min_share, 100 * f.max_share,
                absorbed.c_str(), o.factor);
  return b;
}

}  // namespace

std::vector<RunFinding> FindRunPatterns(const InstanceTable& t, const RunPatternOptions& o, DecisionResult* d,
                                        std::vector<std::vector<BlamedFamily>>* blame) {
  std::map<std::pair<int, int64_t>, std::vector<uint32_t>> lanes;  // (view, rank) -> units
  for (uint32_t u = 0; u < t.steps.size() && u < d->units.size(); ++u)
    lanes[{ViewIndex(t.steps[u].view), t.steps[u].rank.value_or(-1)}].push_back(u);
  std::vector<RunFinding> out;
  for (const auto& [lane, units] : lanes) {
    int judged = 0;
    std::vector<Member> members;
    for (uint32_t u : units) {
      const UnitVerdict& v = d->units[u];
      judged += v.verdict != Verdict::kInsufficient;
      const auto& blamed = (*blame)[u];
      if (v.verdict != Verdict::kAbnormal || blamed.empty()) continue;
      double excess = 0;
      bool host_only = true;
      for (const BlamedFamily& b : blamed) {
        if (b.effect_of != kNoString) continue;  // its time is its cause's (impact.h)
        host_only = host_only && b.metric == Metric::kHost;
        excess += b.excess_ns;
      }
      if (!host_only) continue;
      const double impact = std::isnan(v.impact_ns) ? excess : v.impact_ns;
      const double dur = std::max(1.0, static_cast<double>(t.steps[u].end_ns - t.steps[u].start_ns));
      members.push_back({u, excess, impact, impact / dur});
    }
    const int need = std::max(o.min_units, static_cast<int>(std::ceil(o.min_share * judged)));
    if (static_cast<int>(members.size()) < need || members.empty()) continue;
    std::vector<double> ex;
    for (const Member& m : members) ex.push_back(m.excess);
    std::sort(ex.begin(), ex.end());
    const size_t n = ex.size();
    RunFinding f;
    f.view = t.steps[members[0].unit].view;
    f.rank = lane.second;
    f.units = static_cast<int>(n);
    f.judged = judged;
    f.typical_excess_ns = n % 2 ? ex[n / 2] : 0.5 * (ex[n / 2 - 1] + ex[n / 2]);
    f.min_excess_ns = ex.front();
    f.max_excess_ns = ex.back();
    f.min_share = 1e300;
    std::map<uint32_t, double> often;  // family -> summed excess
    const int index = static_cast<int>(out.size());
    for (const Member& m : members) {
      f.impact_ns += m.impact;
      f.absorbed_ns += std::max(0.0, m.excess - m.impact);
      f.min_share = std::min(f.min_share, m.share);
      f.max_share = std::max(f.max_share, m.share);
      for (const BlamedFamily& b : (*blame)[m.unit])
        if (b.effect_of == kNoString) often[b.family] += b.excess_ns;
      if (m.excess > o.factor * f.typical_excess_ns) continue;  // differs from the run's other steps
      UnitVerdict& v = d->units[m.unit];
      v.verdict = Verdict::kNormal;
      v.run_finding = index;
      ViewDecision& view = d->views[ViewIndex(f.view)];
      --view.flagged;
      ++view.run_pattern;
      ++f.demoted;
      (*blame)[m.unit].clear();
    }
    std::vector<std::pair<double, uint32_t>> ranked;
    for (const auto& [family, excess] : often) ranked.emplace_back(-excess, family);
    std::sort(ranked.begin(), ranked.end());
    for (size_t k = 0; k < ranked.size() && k < 3; ++k) f.families.push_back(ranked[k].second);
    f.sentence = Sentence(t, f, o);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace truffld::diagnose
