// report.html cards: which abnormal units get one, the cards with their operators, call chains
// and cost histograms, and the index of every abnormal unit (see html_report.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "report/html_report_parts.h"
#include "report/root_causes.h"

namespace truffld::diagnose::report {
namespace {

constexpr double kHistW = 320, kHistH = 66, kPlotL = 6, kPlotR = 314, kBarTop = 4, kAxis = 44;

double BinX(int b) { return kPlotL + (kPlotR - kPlotL) * b / CostHistogram::kBins; }

std::string SourceLabel(PeerSource s) {
  if (s == PeerSource::kTp) return "TP peers";
  if (s == PeerSource::kTime) return "similar steps";
  return PeerSourceName(s);
}

std::string Heading(size_t rank_in_list, const StepDiagnosis& s, const std::string& id, const std::string& impact) {
  const StepEvidence& e = s.evidence;
  std::string h = "<h3><a href='#" + id + "'>" + std::to_string(rank_in_list) + ".</a> rank " + RankText(e) +
                  " &middot; step " + std::to_string(e.step_index) + " &middot; " + HtmlEscape(ViewName(e.view));
  if (!e.phase.empty() && e.phase != "unknown") h += " &middot; " + HtmlEscape(e.phase);
  return h + " &mdash; " + impact + "</h3>";
}

// Where the unit's step lies: in the merge trace (us since its origin, as Perfetto shows
// timestamps) when there is one, and in absolute ns (the dumps' clock) always.
std::string WhereInTrace(const StepEvidence& e, std::optional<int64_t> origin) {
  if (e.end_ns <= e.start_ns) return "";
  std::string h = "<p class='muted when'>";
  if (origin) {
    h += "in trace.json and diagnosis.trace.json: " + Us(double(e.start_ns - *origin)) + " &ndash; " +
         Us(double(e.end_ns - *origin)) + " us from the trace's start; ";
  }
  return h + "absolute " + std::to_string(e.start_ns) + " &ndash; " + std::to_string(e.end_ns) + " ns</p>";
}

std::string Chain(const StepDiagnosis& s, const FaultyOperator& f) {
  std::string h = "<div class='chain'>call chain: ";
  for (auto it = f.parent_chain.rbegin(); it != f.parent_chain.rend(); ++it) {
    h += "<span class='name'>" + HtmlEscape(*it) + "</span> &rsaquo; ";
  }
  h += "<span class='name self'>" + HtmlEscape(f.family) + "</span>";
  for (const FamilyEvidence& fe : s.evidence.families) {
    if (fe.family != f.family || fe.kernels.empty()) continue;
    h += " &rsaquo; kernels:";
    for (const auto& k : fe.kernels) h += " <span class='name k'>" + HtmlEscape(k) + "</span>";
    break;
  }
  return h + "</div>";
}

// The unit's own values drawn under its family's histogram (defined once in RenderHistogramDefs).
std::string Histogram(const ReportRunData& run, size_t unit, const FaultyOperator& f, std::vector<bool>* used) {
  const UnitCosts* c = nullptr;
  for (const UnitCosts& x : run.unit_costs) {
    if (x.diagnosis == unit && x.family == f.family && (!f.cost || x.metric == MetricText(f))) { c = &x; break; }
  }
  if (c == nullptr || c->histogram >= run.histograms.size() || c->values_ns.empty()) return "";
  const CostHistogram& hist = run.histograms[c->histogram];
  (*used)[c->histogram] = true;
  std::map<int, int> bins;
  float lo = c->values_ns[0], hi = lo;
  for (float v : c->values_ns) {
    ++bins[hist.Bin(v)];
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  std::string h = "<div><svg class='hist' xmlns='http://www.w3.org/2000/svg' width='" + Num(kHistW, 0) +
                  "' height='" + Num(kHistH, 0) + "'><use href='#h" + std::to_string(c->histogram) + "' width='" +
                  Num(kHistW, 0) + "' height='" + Num(kHistH, 0) + "'/>";
  for (const auto& [b, n] : bins) {
    h += "<rect x='" + Num(BinX(b)) + "' y='" + Num(kAxis + 1) + "' width='" + Num(BinX(b + 1) - BinX(b)) +
         "' height='7' fill='" + kVermillion + "'><title>" + std::to_string(n) + " of this unit</title></rect>";
  }
  const std::string what =
      hist.metric == "duration" ? "per-unit total time" : HtmlEscape(hist.metric) + " time per instance";
  h += "</svg><br><span class='muted'>" + what + " of this family in every " + HtmlEscape(hist.view) + " unit (" +
       std::to_string(hist.total) + " values, log scale, bar height ~ log count, dashed: median " + Us(hist.median_ns) +
       " us); <b style='color:" + kVermillion + "'>&#9632;</b> this unit: " + std::to_string(c->values_ns.size()) +
       (c->values_ns.size() == 1 ? " value, " + Us(lo) : " values, " + Us(lo) + " to " + Us(hi)) + " us</span></div>";
  return h;
}

std::string PeerCard(const StepDiagnosis& s, const ReportRunData& run, size_t unit, std::vector<bool>* used) {
  const StepEvidence& e = s.evidence;
  const double step_ns = static_cast<double>(e.step_duration_ns > 0 ? e.step_duration_ns : e.end_ns - e.start_ns);
  const PeerUnitEvidence& pe = *e.peer;
  std::string h = "<p class='ev'>" + HtmlEscape(pe.summary) + "</p>";
  h += "<table><tr><th>faulty operator</th><th>cost</th><th>observed us</th><th>expected us</th><th>excess us</th>"
       "<th>share of step</th><th>vs TP peers</th><th>vs similar steps</th><th>vs layers</th>"
       "<th>expected from</th></tr>";
  const std::vector<const FaultyOperator*> listed = ListedBlame(s, run.min_impact_share);
  for (const FaultyOperator* op : listed) {
    const FaultyOperator& f = *op;
    const PeerCost& c = CostOrNone(f.cost);
    h += "<tr><td class='name'>" + HtmlEscape(f.family) + "</td><td>" + HtmlEscape(MetricText(f)) + "</td><td class='n'>" +
         Us(c.observed_ns) + "</td><td class='n'>" + Us(c.expected_ns) + "</td><td class='n'>+" + Us(c.excess_ns) +
         "</td><td class='n'>" + Pct(c.share) + "</td>";
    for (const char* src : {"tp_peers", "similar_steps", "layers"}) {
      std::string cell = "&ndash;";
      for (const auto& [source, ratio] : c.ratios) {
        if (std::string(PeerSourceName(source)) == src) cell = Num(ratio, ratio < 10 ? 2 : 1) + "&times;";
      }
      h += "<td class='n'>" + cell + "</td>";
    }
    h += "<td>" + HtmlEscape(f.cost ? SourceLabel(c.basis) : std::string()) + "</td></tr>";
  }
  h += "</table>";
  if (listed.size() < s.faulty.size()) {
    h += "<p class='muted'>" + std::to_string(s.faulty.size() - listed.size()) + " more operator" +
         (s.faulty.size() - listed.size() == 1 ? " was" : "s were") + " slower than " +
         "expected but would save less than " + Pct(run.min_impact_share) + " of the step each: not listed.</p>";
  }
  for (const FaultyOperator* op : listed) {
    const FaultyOperator& f = *op;
    h += "<div class='op'><b class='name'>" + HtmlEscape(f.family) + "</b> <span class='muted'>" +
         FaultClassName(ClassifyBlame(e.view, f.family, f.layer, CostOrNone(f.cost).metric)) + ": " +
         FaultClassHint(ClassifyBlame(e.view, f.family, f.layer, CostOrNone(f.cost).metric)) + "</span>";
    // One listed operator: the unit's sentence above already gives its evidence.
    if (listed.size() > 1 && !CostOrNone(f.cost).sentence.empty()) {
      h += "<div>" + HtmlEscape(CostOrNone(f.cost).sentence) + "</div>";
    }
    h += Chain(s, f) + Histogram(run, unit, f, used) + "</div>";
  }
  std::string meta = "step " + Us(step_ns) + " us";
  if (pe.waited_ns > 0) {
    meta += "; waited " + Us(pe.waited_ns) + " us in collectives" +
            (pe.waiting_on >= 0 ? ", mostly for rank " + std::to_string(pe.waiting_on) : std::string());
  }
  // The offline policy's rationale repeats the evidence sentence; an LLM's says something new.
  const bool llm = s.decision.source == DecisionSource::kLlm || s.decision.source == DecisionSource::kCache;
  meta += "; Stage II: " + std::string(DecisionSourceName(s.decision.source)) +
          (llm && !s.decision.rationale.empty() ? " &ldquo;" + HtmlEscape(s.decision.rationale) + "&rdquo;" : "");
  return h + "<p class='muted'>" + meta + "; step name <span class='name'>" + HtmlEscape(e.step_name) +
         "</span> &middot; <a href='#top'>top</a></p>";
}

std::string LegacyCard(const StepDiagnosis& s, const ReportRunData& run, size_t unit, std::vector<bool>* used) {
  std::string h = "<p class='ev'>" + HtmlEscape(s.decision.rationale) + " [" + DecisionSourceName(s.decision.source) +
                  "]</p><table><tr><th>faulty operator</th><th>score</th><th>p(normal)</th><th>instances</th>"
                  "<th>method</th></tr>";
  for (const FaultyOperator& f : s.faulty) {
    h += "<tr><td class='name'>" + HtmlEscape(f.family) + "</td><td class='n'>" + Num(f.score, 3) +
         "</td><td class='n'>" + Sci(f.probability) + "</td><td class='n'>" + std::to_string(f.instances) +
         "</td><td>" + HtmlEscape(f.method) + "</td></tr>";
  }
  h += "</table>";
  for (const FaultyOperator& f : s.faulty) {
    h += "<div class='op'><b class='name'>" + HtmlEscape(f.family) + "</b>" + Chain(s, f) +
         Histogram(run, unit, f, used) + "</div>";
  }
  return h + "<p class='muted'>step name <span class='name'>" + HtmlEscape(s.evidence.step_name) +
         "</span> &middot; <a href='#top'>top</a></p>";
}

}  // namespace

CardPlan PlanCards(const std::vector<StepDiagnosis>& d, size_t max_cards) {
  CardPlan p;
  p.ids.assign(d.size(), "");
  p.has_card.assign(d.size(), false);
  std::vector<double> impact(d.size(), 0);
  for (size_t u = 0; u < d.size(); ++u) {
    if (!d[u].abnormal) continue;
    p.abnormal.push_back(u);
    impact[u] = Impact(d[u]);
  }
  std::stable_sort(p.abnormal.begin(), p.abnormal.end(), [&](size_t a, size_t b) { return impact[a] > impact[b]; });
  std::set<std::string> taken;
  std::map<std::optional<int64_t>, std::vector<size_t>> by_rank;
  for (size_t u : p.abnormal) {
    std::string id = UnitAnchor(d[u].evidence);
    for (int k = 2; !taken.insert(id).second; ++k) id = UnitAnchor(d[u].evidence) + "-" + std::to_string(k);
    p.ids[u] = id;
    by_rank[d[u].evidence.rank].push_back(u);
  }
  // Each rank keeps its highest-impact units up to a share of the cap; the rest by impact.
  if (!by_rank.empty()) {
    p.per_rank_reserved = std::max<size_t>(max_cards / (2 * by_rank.size()), max_cards >= by_rank.size() ? 1 : 0);
  }
  size_t chosen = 0;
  for (const auto& [rank, units] : by_rank) {
    for (size_t i = 0; i < units.size() && i < p.per_rank_reserved && chosen < max_cards; ++i, ++chosen) {
      p.has_card[units[i]] = true;
    }
  }
  for (size_t u : p.abnormal) {
    if (chosen >= max_cards) break;
    if (!p.has_card[u]) { p.has_card[u] = true; ++chosen; }
  }
  for (size_t u : p.abnormal) {
    if (p.has_card[u]) p.cards.push_back(u);
  }
  return p;
}

std::string RenderHistogramDefs(const ReportRunData& run, const std::vector<bool>& used) {
  std::string h = "<svg xmlns='http://www.w3.org/2000/svg' width='0' height='0' style='position:absolute'>";
  for (size_t k = 0; k < run.histograms.size(); ++k) {
    if (!used[k]) continue;
    const CostHistogram& c = run.histograms[k];
    uint32_t peak = 1;
    for (uint32_t n : c.counts) peak = std::max(peak, n);
    h += "<symbol id='h" + std::to_string(k) + "' viewBox='0 0 " + Num(kHistW, 0) + " " + Num(kHistH, 0) + "'>"
         "<line x1='" + Num(kPlotL) + "' x2='" + Num(kPlotR) + "' y1='" + Num(kAxis) + "' y2='" + Num(kAxis) +
         "' stroke='#888'/>";
    for (int b = 0; b < CostHistogram::kBins; ++b) {
      const uint32_t n = c.counts[static_cast<size_t>(b)];
      if (n == 0) continue;
      const double bar = (kAxis - kBarTop) * std::log1p(n) / std::log1p(peak);
      h += "<rect x='" + Num(BinX(b)) + "' y='" + Num(kAxis - bar) + "' width='" + Num(BinX(b + 1) - BinX(b) - 0.5) +
           "' height='" + Num(bar) + "' fill='" + kSky + "'/>";
    }
    if (c.total > 0) {
      const double x = BinX(c.Bin(c.median_ns)) + (BinX(1) - BinX(0)) / 2;
      h += "<line x1='" + Num(x) + "' x2='" + Num(x) + "' y1='" + Num(kBarTop) + "' y2='" + Num(kAxis) + "' stroke='" +
           kBlue + "' stroke-dasharray='3,2'/>";
    }
    h += "<text x='" + Num(kPlotL) + "' y='63' font-size='10'>" + Us(c.lo_ns) + " us</text><text x='" + Num(kPlotR) +
         "' y='63' font-size='10' text-anchor='end'>" + Us(c.hi_ns) + " us</text></symbol>";
  }
  return h + "</svg>";
}

std::string RenderCards(const std::vector<StepDiagnosis>& d, const ReportRunData& run, const CardPlan& plan,
                        std::vector<bool>* used, std::optional<int64_t> trace_origin_ns) {
  const bool by_cost = AnyPeer(d);
  std::string h =
      "<h2 id='cards'>Abnormal units by " + std::string(by_cost ? "time impact" : "summed score") + "</h2>";
  if (plan.abnormal.empty()) return h + "<p>None.</p>";
  h += "<p>" + std::to_string(plan.abnormal.size()) + " abnormal units" +
       (plan.cards.size() < plan.abnormal.size()
            ? "; the " + std::to_string(plan.cards.size()) + " cards below are those with the most " +
                  (by_cost ? "time cost" : "score") + " across all ranks, each rank keeping at least its " +
                  std::to_string(plan.per_rank_reserved) + " highest (the rest are in the <a href='#index'>index</a> "
                  "and in diagnosis.jsonl)"
            : std::string(by_cost ? ", highest cost first (the step time saved without the anomaly), across all ranks" : "")) +
       ".</p><p><input id='card-filter' hidden type='search' placeholder='filter cards by text, e.g. "
       "rank 3 &middot; or aten::mm'> <span id='card-count' class='muted'></span></p>";
  size_t n = 0;
  for (size_t u : plan.cards) {
    const StepDiagnosis& s = d[u];
    const StepEvidence& e = s.evidence;
    const double step_ns = static_cast<double>(e.step_duration_ns > 0 ? e.step_duration_ns : e.end_ns - e.start_ns);
    const double saved = UnitCostNs(s);
    const std::string impact = e.peer
        ? (std::isfinite(e.peer->impact_ns) ? "costs " : "+") + Us(saved) + " us" +
              (step_ns > 0 ? " (" + Pct(saved / step_ns) + " of the step)" : std::string())
        : "score " + Num(Impact(s), 3);
    h += "<section class='card" + std::string(e.peer ? "" : " legacy") + "' id='" + plan.ids[u] + "'>" +
         Heading(++n, s, plan.ids[u], impact) + WhereInTrace(e, trace_origin_ns) +
         (e.peer ? PeerCard(s, run, u, used) : LegacyCard(s, run, u, used)) + "</section>";
  }
  return h;
}

std::string RenderIndex(const std::vector<StepDiagnosis>& d, const CardPlan& plan) {
  std::string h = "<h2 id='index'>Index of abnormal units</h2>";
  if (plan.abnormal.empty()) return h + "<p>None.</p>";
  h += "<p class='muted'>Every abnormal unit by rank, view and step. A link opens its card; a grey entry has no "
       "card (beyond the cap) and carries its anchor itself: hover for its top operator, diagnosis.jsonl "
       "has the rest.</p>";
  std::map<std::optional<int64_t>, std::map<std::string, std::vector<size_t>>> by_rank;
  for (size_t u : plan.abnormal) by_rank[d[u].evidence.rank][ViewName(d[u].evidence.view)].push_back(u);
  for (auto& [rank, views] : by_rank) {
    const std::string name = rank ? std::to_string(*rank) : "x";
    h += "<h3 id='idx-r" + name + "'>rank " + (rank ? name : "-") + "</h3>";
    for (auto& [view, units] : views) {
      std::stable_sort(units.begin(), units.end(), [&](size_t a, size_t b) {
        return d[a].evidence.step_index < d[b].evidence.step_index;
      });
      h += "<p class='idx'>" + HtmlEscape(view) + " (" + std::to_string(units.size()) + "): ";
      for (size_t u : units) {
        const std::string step = std::to_string(d[u].evidence.step_index);
        if (plan.has_card[u]) {
          h += "<a href='#" + plan.ids[u] + "'>" + step + "</a>";
          continue;
        }
        std::string title;
        if (!d[u].faulty.empty()) {
          const FaultyOperator& f = d[u].faulty[0];
          title = f.family + (d[u].evidence.peer ? " +" + Us(f.ExcessNs()) + " us" : " score " + Num(f.score, 3));
        }
        h += "<span class='muted' id='" + plan.ids[u] + "' title='" + HtmlEscape(title) + "'>" + step + "</span>";
      }
      h += "</p>";
    }
  }
  return h;
}

}  // namespace truffld::diagnose::report
