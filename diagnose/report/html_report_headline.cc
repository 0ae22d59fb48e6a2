// report.html headline: what is wrong, where, and what it cost the run, then the root causes
// (root_causes.h) with a fault class and a hint of what to check (see html_report.h).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>

#include "report/html_report_parts.h"
#include "report/output.h"
#include "report/root_causes.h"

namespace truffld::diagnose::report {
namespace {

constexpr size_t kMaxCauses = 12;

std::string Ms(double ns) { return Num(ns / 1e6, std::abs(ns) >= 1e8 ? 0 : std::abs(ns) >= 1e7 ? 1 : 2) + " ms"; }

std::string RanksText(const RootCause& c) {
  std::string out;
  const size_t shown = std::min<size_t>(c.ranks.size(), 6);
  for (size_t i = 0; i < shown; ++i) {
    if (i) out += ", ";
    out += (c.ranks[i] >= 0 ? std::to_string(c.ranks[i]) : std::string("?"));
    if (c.ranks.size() > 1) out += " (" + std::to_string(c.rank_units[i]) + ")";
  }
  if (c.ranks.size() > shown) out += " and " + std::to_string(c.ranks.size() - shown) + " more";
  return (c.ranks.size() == 1 ? "rank " : "ranks ") + out;
}

std::string StepsText(const RootCause& c) {
  return c.first_step == c.last_step ? "step " + std::to_string(c.first_step)
                                     : "steps " + std::to_string(c.first_step) + "&ndash;" + std::to_string(c.last_step);
}

std::string What(const RootCause& c) {
  if (c.fault_class == FaultClass::kStragglerRank) {
    return "rank " + std::to_string(c.ranks.empty() ? -1 : c.ranks[0]) + " made the others wait" +
           (c.cause.empty() ? std::string() : " (in its costliest step: " + HtmlEscape(c.cause) + ")");
  }
  return "<span class='name'>" + HtmlEscape(c.family) + "</span>" +
         (c.metric.empty() ? std::string() : " " + HtmlEscape(c.metric) + " time") + ", " + ViewName(c.view);
}

std::string Sentence(const std::vector<StepDiagnosis>& d, const ReportRunData& run, const std::vector<RootCause>& causes) {
  double total = 0;
  const double cost = RunCostNs(d, &total);
  const UnitTally tally = TallyUnits(d);
  const int units = int(tally.abnormal), judged = int(tally.judged), insufficient = int(tally.insufficient);
  // Not an all-clear when nothing was compared.
  if (const std::string none = NoUnitJudgedSentence(tally, "", "see <a href='#run'>the run</a>",
                                                    HtmlEscape(UnjudgedReason(tally)));
      !none.empty())
    return "<p class='headline'>" + none + "</p>";
  if (units == 0 && run.stragglers.empty()) {
    // A view that could not flag a lone slow step (RenderHeadline's note) is no all-clear.
    const bool blind = run.null_blind[0] || run.null_blind[1];
    std::string h = std::string(blind ? "<p class='headline'>" : "<p class='headline ok'>") + "No abnormal step: " + std::to_string(judged) + " units judged" +
                    (run.alpha > 0 ? " at a " + Pct(run.alpha) + " false-alarm rate" : std::string()) + ".";
    if (insufficient) h += " " + std::to_string(insufficient) + " units could not be judged (see <a href='#run'>the run</a>).";
    return h + "</p>";
  }
  std::string h = "<p class='headline'>" + std::to_string(units) + " abnormal unit" + (units == 1 ? "" : "s") + " of " +
                  std::to_string(d.size());
  if (AnyPeer(d)) {
    h += ": they cost the run " + Ms(cost) + " of step time" +
         (total > 0 ? " (" + Pct(cost / total) + " of " + Ms(total) + ")" : std::string());
  }
  h += ".";
  if (!causes.empty()) {
    const RootCause& c = causes[0];
    h += " The largest cause: <b>" + std::string(FaultClassName(c.fault_class)) + "</b> &mdash; " + What(c) + ", " +
         RanksText(c) + ", " + StepsText(c) + (AnyPeer(d) ? ", " + Ms(c.cost_ns) : std::string()) + ".";
  }
  return h + "</p>";
}

std::string CauseRow(size_t i, const RootCause& c, const CardPlan& plan, bool by_cost, const std::string& hint) {
  std::string where = RanksText(c) + ", " + StepsText(c);
  if (c.top_unit < plan.ids.size() && !plan.ids[c.top_unit].empty()) {
    where += " &middot; <a href='#" + plan.ids[c.top_unit] + "'>costliest</a>";
  } else if (c.fault_class == FaultClass::kStragglerRank) {
    where += " &middot; <a href='#stragglers'>steps</a>";
  }
  return "<tr><td class='n'>" + std::to_string(i + 1) + "</td><td><b>" + FaultClassName(c.fault_class) + "</b></td><td>" +
         What(c) + "</td><td>" + where + "</td><td class='n'>" + std::to_string(c.units) + "</td>" +
         (by_cost ? "<td class='n'>" + Ms(c.cost_ns) + "</td>" : std::string()) + "<td class='hint'>" + hint +
         "</td></tr>";
}

}  // namespace

std::string RenderHeadline(const std::vector<StepDiagnosis>& d, const ReportRunData& run, const CardPlan& plan) {
  const std::vector<RootCause> causes = GroupRootCauses(d, run);
  const bool by_cost = AnyPeer(d);
  std::string h = "<section id='headline'><h2>What is wrong</h2>" + Sentence(d, run, causes);
  for (int v = 0; v < 2; ++v) {
    const std::string note = RunCalibrationNote(v == 0 ? "vertical" : "horizontal", run.null_centre[v],
                                                run.null_scale[v], run.null_blind[v], run.best_possible_p[v],
                                                run.long_step_ratio);
    if (note.empty()) continue;
    std::string text = HtmlEscape(note);
    text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
    h += "<p class='" + std::string(run.null_blind[v] ? "headline" : "muted") + "'>" + text + ".</p>";
  }
  if (!causes.empty()) {
    h += "<table id='root-causes'><tr><th>#</th><th>fault class</th><th>what</th><th>where (units per rank)</th>"
         "<th>units</th>" + std::string(by_cost ? "<th>step time cost</th>" : "") + "<th>what to check</th></tr>";
    std::vector<size_t> first(8, SIZE_MAX);  // per fault class, the row that gives its hint
    for (size_t i = 0; i < causes.size() && i < kMaxCauses; ++i) {
      size_t& f = first[static_cast<size_t>(causes[i].fault_class)];
      const std::string hint = f == SIZE_MAX ? FaultClassHint(causes[i].fault_class) : "as #" + std::to_string(f + 1);
      if (f == SIZE_MAX) f = i;
      h += CauseRow(i, causes[i], plan, by_cost, hint);
    }
    h += "</table>";
    if (causes.size() > kMaxCauses) {
      h += "<p class='muted'>" + std::to_string(causes.size() - kMaxCauses) +
           " smaller causes are in the <a href='#families'>family table</a> and the cards.</p>";
    }
    h += "<p class='muted'>Cost: the step time saved without the blamed excess (what-if replay of the step), summed "
         "over the units it explains; blame that would save less than " +
         Pct(run.min_impact_share) + " of its step is not listed. A straggler's cost is the time the other ranks "
         "waited for it.</p>";
  }
  if (!run.run_findings.empty()) {
    h += "<p>How this run behaves (reported once, not as a fault of each step):</p><ul>";
    for (const std::string& f : run.run_findings) h += "<li>" + HtmlEscape(f) + "</li>";
    h += "</ul>";
  }
  return h + "</section>";
}

}  // namespace truffld::diagnose::report
