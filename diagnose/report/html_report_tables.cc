// report.html tables: the run's calibration and unjudged units, per-rank and per-family totals,
// and the straggler table (see html_report.h).
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "report/html_report_parts.h"
#include "report/root_causes.h"

namespace truffld::diagnose::report {
namespace {

std::string Cell(const std::string& s) { return "<td>" + s + "</td>"; }
std::string NumCell(const std::string& s) { return "<td class='n'>" + s + "</td>"; }

std::string Threshold(const ReportRunData& run, int v) {
  if (run.judged[v] == 0) return "no unit judged";
  return run.threshold[v] > 0 ? "p &le; " + Sci(run.threshold[v])
                              : "none reached (no unit of this view flagged)";
}

// Insufficient-evidence units by reason and view, with a few examples each.
std::string InsufficientTable(const std::vector<StepDiagnosis>& d) {
  struct Reason { int count[2] = {0, 0}; std::vector<std::string> examples; };
  std::map<std::string, Reason> reasons;
  for (const StepDiagnosis& s : d) {
    if (s.label != Verdict::kInsufficient) continue;
    Reason& r = reasons[InsufficientReason(s.evidence)];
    ++r.count[ViewIndex(s.evidence.view)];
    if (r.examples.size() < 4) {
      r.examples.push_back("rank " + RankText(s.evidence) + " step " + std::to_string(s.evidence.step_index) +
                           " " + ViewLetter(s.evidence.view));
    }
  }
  if (reasons.empty()) return "";
  std::string h = "<table><tr><th>why the unit could not be judged</th><th>vertical</th><th>horizontal</th>"
                  "<th>for example</th></tr>";
  size_t rows = 0;
  for (const auto& [why, r] : reasons) {
    if (++rows > 30) {
      h += "<tr><td colspan='4'>(" + std::to_string(reasons.size() - 30) + " more reasons)</td></tr>";
      break;
    }
    std::string ex;
    for (const auto& e : r.examples) ex += (ex.empty() ? "" : ", ") + e;
    h += "<tr>" + Cell(HtmlEscape(why)) + NumCell(std::to_string(r.count[0])) + NumCell(std::to_string(r.count[1])) +
         Cell(ex + (r.count[0] + r.count[1] > static_cast<int>(r.examples.size()) ? ", ..." : "")) + "</tr>";
  }
  return h + "</table>";
}

// The run's warm-up: units that lost at least the impact floor to the first use of GPU code,
// their total, and the costliest few (not judged: see warmup.h).
std::string WarmupRow(const std::vector<StepDiagnosis>& d, const ReportRunData& run) {
  std::vector<std::pair<double, const StepDiagnosis*>> costly;
  for (const StepDiagnosis& s : d) {
    double sum = 0;
    if (!s.evidence.peer) continue;
    for (const WarmupEvidence& w : s.evidence.peer->warmup) sum += w.excess_ns;
    if (sum > 0) costly.emplace_back(sum, &s);
  }
  std::sort(costly.begin(), costly.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string ex;
  for (size_t i = 0; i < costly.size() && i < 3; ++i) {
    const StepEvidence& e = costly[i].second->evidence;
    ex += (ex.empty() ? "" : ", ") + std::string("rank ") + RankText(e) + " step " + std::to_string(e.step_index) + " " +
          ViewLetter(e.view) + ": " + HtmlEscape(e.peer->warmup[0].family) + " +" + Us(costly[i].first) + " &micro;s";
  }
  const int n = run.warmup_units[0] + run.warmup_units[1];
  return "<tr><th>warm-up (not judged)</th><td>" + std::to_string(n) + (n == 1 ? " unit" : " units") + " lost at least the impact floor to the first use of GPU code (a kernel loaded or compiled), +" +
         Us(run.warmup_ns[0] + run.warmup_ns[1]) + " &micro;s in all" + (ex.empty() ? "" : "; costliest: " + ex) +
         "</td></tr>";
}

}  // namespace

std::string RenderRunSection(const std::vector<StepDiagnosis>& d, const ReportRunData& run, const ReportContext& ctx) {
  int units[2] = {0, 0};
  std::set<std::string> ranks;
  int64_t lo = 0, hi = -1;
  for (const StepDiagnosis& s : d) {
    ++units[ViewIndex(s.evidence.view)];
    ranks.insert(RankText(s.evidence));
    if (hi < lo) lo = hi = s.evidence.step_index;
    lo = std::min(lo, s.evidence.step_index);
    hi = std::max(hi, s.evidence.step_index);
  }
  std::string h = "<h2 id='run'>The run</h2><table>";
  h += "<tr><th>units</th><td>" + std::to_string(d.size()) + " (" + std::to_string(units[0]) + " vertical, " +
       std::to_string(units[1]) + " horizontal) on " + std::to_string(ranks.size()) + " rank(s), steps " +
       (hi < lo ? std::string("-") : std::to_string(lo) + " to " + std::to_string(hi)) + "</td></tr>";
  h += "<tr><th>abnormal</th><td>" + std::to_string(run.flagged[0]) + " vertical, " + std::to_string(run.flagged[1]) +
       " horizontal</td></tr>";
  if (run.from_peer) {
    h += "<tr><th>false-alarm rate</th><td>" + Num(100 * run.alpha, run.alpha < 0.01 ? 2 : 1) +
         "% of healthy units at most (Benjamini-Hochberg level per view)</td></tr>";
    h += "<tr><th>thresholds</th><td>vertical: " + Threshold(run, 0) + "; horizontal: " + Threshold(run, 1) +
         "</td></tr>";
    h += "<tr><th>judged</th><td>" + std::to_string(run.judged[0]) + " vertical, " + std::to_string(run.judged[1]) +
         " horizontal</td></tr>";
    h += "<tr><th>could not be judged</th><td>" + std::to_string(run.insufficient[0] + run.insufficient[1]) +
         " units with insufficient evidence (" + std::to_string(run.insufficient[0]) + " vertical, " +
         std::to_string(run.insufficient[1]) + " horizontal): never called abnormal</td></tr>";
    if (run.warmup_units[0] + run.warmup_units[1] > 0) h += WarmupRow(d, run);
    if (run.timer_resolution_ns > 1) {
      h += "<tr><th>timer resolution</th><td>" + std::to_string(run.timer_resolution_ns) + " ns</td></tr>";
    }
  } else {
    h += "<tr><th>calibration</th><td>none: mode " + HtmlEscape(ctx.mode) +
         " decides with Stage I's scores and Stage II's rules, without a stated false-alarm rate</td></tr>";
  }
  return h + "</table>" + InsufficientTable(d);
}

std::string RenderRankTable(const std::vector<StepDiagnosis>& d, const ReportRunData& run) {
  struct Row { int units[2] = {0, 0}, abnormal[2] = {0, 0}, insufficient = 0, straggler = 0;
               double excess = 0, caused = 0; };
  std::map<std::optional<int64_t>, Row> rows;
  const bool by_cost = AnyPeer(d);
  for (const StepDiagnosis& s : d) {
    Row& r = rows[s.evidence.rank];
    const int v = ViewIndex(s.evidence.view);
    ++r.units[v];
    r.abnormal[v] += s.abnormal;
    r.insufficient += s.label == Verdict::kInsufficient;
    if (s.abnormal) r.excess += Impact(s);
  }
  for (const auto& s : run.stragglers) {
    Row& r = rows[s.rank >= 0 ? std::optional<int64_t>(s.rank) : std::nullopt];
    ++r.straggler;
    r.caused += s.caused_ns;
  }
  std::string h = "<h2 id='ranks'>Per rank</h2><table><tr><th>rank</th><th>units V / H</th><th>abnormal V / H</th>"
                  "<th>insufficient evidence</th><th>" + std::string(by_cost ? "total cost us" : "summed score") +
                  "</th>" + (run.stragglers.empty() ? "" : "<th>steps as straggler</th><th>wait caused us</th>") +
                  "</tr>";
  for (const auto& [rank, r] : rows) {
    const std::string name = rank ? std::to_string(*rank) : "x";
    const bool any = r.abnormal[0] + r.abnormal[1] > 0;
    h += "<tr>" + Cell(any ? "<a href='#idx-r" + name + "'>" + (rank ? name : "-") + "</a>" : (rank ? name : "-")) +
         NumCell(std::to_string(r.units[0]) + " / " + std::to_string(r.units[1])) +
         NumCell(std::to_string(r.abnormal[0]) + " / " + std::to_string(r.abnormal[1])) +
         NumCell(std::to_string(r.insufficient)) + NumCell(by_cost ? Us(r.excess) : Num(r.excess, 2));
    if (!run.stragglers.empty()) h += NumCell(std::to_string(r.straggler)) + NumCell(Us(r.caused));
    h += "</tr>";
  }
  return h + "</table>";
}

std::string RenderFamilyTable(const std::vector<StepDiagnosis>& d, const CardPlan& plan) {
  struct Row { std::string view, family; int units = 0; double total = 0, top = -1; size_t top_unit = 0;
               std::map<std::string, int> metrics; };
  std::map<std::pair<std::string, std::string>, Row> rows;
  const bool by_cost = AnyPeer(d);
  for (size_t u : plan.abnormal) {
    for (const FaultyOperator& f : d[u].faulty) {
      Row& r = rows[{ViewName(d[u].evidence.view), f.family}];
      r.view = ViewName(d[u].evidence.view);
      r.family = f.family;
      ++r.units;
      const double x = by_cost ? BlameCostNs(f) : f.score;
      r.total += x;
      if (x > r.top) { r.top = x; r.top_unit = u; }
      if (f.cost) ++r.metrics[MetricText(f)];
    }
  }
  std::vector<const Row*> order;
  for (const auto& [k, r] : rows) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const Row* a, const Row* b) { return a->total > b->total; });
  std::string h = "<h2 id='families'>Per family</h2>";
  if (order.empty()) return h + "<p>No family was found faulty.</p>";
  h += "<p>Families found faulty in abnormal units, " +
       std::string(by_cost ? "by total cost (the step time saved without them; their excess where a step could "
                             "not be replayed)" : "by summed score") +
       ".</p><table><tr><th>view</th><th>family</th><th>abnormal units</th><th>" +
       (by_cost ? "total cost us</th><th>largest cost us</th><th>metric" : "summed score</th><th>largest score") +
       "</th><th>worst unit</th></tr>";
  const size_t cap = 60;
  for (size_t i = 0; i < order.size() && i < cap; ++i) {
    const Row& r = *order[i];
    std::string metrics;
    for (const auto& [m, n] : r.metrics) {
      metrics += (metrics.empty() ? "" : ", ") + HtmlEscape(m) + " " + std::to_string(n);
    }
    const StepEvidence& e = d[r.top_unit].evidence;
    h += "<tr>" + Cell(HtmlEscape(r.view)) + "<td class='name'>" + HtmlEscape(r.family) + "</td>" +
         NumCell(std::to_string(r.units)) + NumCell(by_cost ? Us(r.total) : Num(r.total, 2)) +
         NumCell(by_cost ? Us(r.top) : Num(r.top, 3)) + (by_cost ? Cell(metrics) : "") +
         Cell("<a href='#" + plan.ids[r.top_unit] + "'>rank " + RankText(e) + " step " +
              std::to_string(e.step_index) + "</a>") + "</tr>";
  }
  if (order.size() > cap) {
    h += "<tr><td colspan='7'>(" + std::to_string(order.size() - cap) + " more families)</td></tr>";
  }
  return h + "</table>";
}

std::string RenderStragglers(const ReportRunData& run, const std::vector<StepDiagnosis>& d, const CardPlan& plan) {
  if (run.stragglers.empty()) return "";
  std::set<std::string> anchors;
  for (size_t u = 0; u < d.size(); ++u) {
    if (!plan.ids[u].empty()) anchors.insert(plan.ids[u]);
  }
  const size_t cap = 50;
  std::string h = "<h2 id='stragglers'>Stragglers</h2><p>Steps where one rank entered the collectives last and "
                  "made the others wait (" + std::to_string(run.stragglers.size()) + " steps" +
                  (run.stragglers.size() > cap ? ", the " + std::to_string(cap) + " longest delays shown"
                                               : std::string()) +
                  "; per-rank totals are in the rank table). Ranks that only waited are not faulty.</p>"
                  "<table><tr><th>step</th><th>straggler rank</th><th>delay caused us</th><th>share of its step</th>"
                  "<th>collectives entered last</th><th>ranks that waited on it</th><th>what held it</th></tr>";
  for (size_t i = 0; i < run.stragglers.size() && i < cap; ++i) {
    const auto& s = run.stragglers[i];
    const std::string rank = s.rank >= 0 ? std::to_string(s.rank) : "x";
    const std::string id = "r" + rank + "-s" + std::to_string(s.step_index) + "-h";
    const std::string step = std::to_string(s.step_index);
    h += "<tr>" + Cell(anchors.count(id) ? "<a href='#" + id + "'>" + step + "</a>" : step) +
         NumCell(s.rank >= 0 ? rank : "-") + NumCell(Us(s.caused_ns)) +
         NumCell(s.step_ns > 0 ? Pct(s.caused_ns / s.step_ns) : "-") +
         NumCell(std::to_string(s.last_in) + " of " + std::to_string(s.collectives)) +
         NumCell(std::to_string(s.waiting_ranks)) + Cell(HtmlEscape(s.cause)) + "</tr>";
  }
  return h + "</table>";
}

}  // namespace truffld::diagnose::report
