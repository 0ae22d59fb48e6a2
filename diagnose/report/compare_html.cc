// compare.html (compare_html.h).
#include "report/compare_html.h"

#include <cmath>
#include <cstdio>

#include "peer/format_ns.h"
#include "report/html_report.h"

namespace truffld::diagnose {
namespace {

constexpr size_t kFamilyRows = 200;  // families listed (significant first); compare.json has all

constexpr const char* kCompareStyle =
    "body{font-family:system-ui,sans-serif;margin:16px 24px;color:#222;max-width:1400px}"
    "table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
    "th{background:#f3f3f3;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".headline{font-size:17px;background:#fff4ec;border-left:6px solid #D55E00;padding:8px 12px}"
    "tr.sig td{background:#fbe3d4}.muted{color:#666;font-size:12px}";

std::string X(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3fx", v);
  return b;
}

std::string Verdict(bool significant, bool insufficient) {
  return insufficient ? "insufficient evidence" : significant ? "significant" : "-";
}

std::string Delta(double ns) { return (ns >= 0 ? "+" : "-") + FormatNs(std::fabs(ns)); }

}  // namespace

std::string RenderCompareHtml(const CompareResult& r, const std::string& target, const std::string& baseline,
                              const CompareOptions& o) {
  std::string h = "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                  "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
                  "<title>truffld comparison</title><style>" + std::string(kCompareStyle) + "</style></head><body>";
  h += "<h1>truffld comparison</h1><p>Target: <code>" + HtmlEscape(target) + "</code><br>Baseline: <code>" +
       HtmlEscape(baseline) + "</code></p><p class='headline'>" + HtmlEscape(r.sentence) + "</p>";
  h += "<p class='muted'>Each step is compared with baseline steps of equal workload (same view and phase, tokens and "
       "requests within 2%, context within 25%). Ratios are target over baseline; intervals are 95%. Significant: "
       "the interval excludes no change, the change is at least " + std::to_string(int(std::lround(100 * o.min_change))) +
       "%, it passes Benjamini-Hochberg at 5% over every comparison, and a family's change is worth 0.5% of its steps.</p>";
  h += "<h2>Step time</h2><table><tr><th>view</th><th>phase</th><th>ratio</th><th>95% interval</th><th>per step</th>"
       "<th>steps (target, baseline)</th><th></th></tr>";
  for (const StepTimeChange& s : r.step_time)
    h += std::string(s.significant ? "<tr class='sig'>" : "<tr>") + "<td>" + ViewName(s.view) + "</td><td>" +
         HtmlEscape(s.phase) + "</td><td class='n'>" + X(s.ratio) + "</td><td class='n'>" + X(s.ci_low) + " - " +
         X(s.ci_high) + "</td><td class='n'>" + Delta(s.delta_ns_per_step) + "</td><td class='n'>" +
         std::to_string(s.steps) + ", " + std::to_string(s.baseline_steps) + "</td><td>" +
         Verdict(s.significant, s.insufficient) + "</td></tr>";
  h += "</table><h2>Operator families</h2><table><tr><th>family</th><th>cost</th><th>view</th><th>phase</th>"
       "<th>ratio</th><th>95% interval</th><th>per step</th><th>share of the step's change</th><th>steps</th><th></th></tr>";
  for (size_t i = 0; i < r.families.size() && i < kFamilyRows; ++i) {
    const FamilyChange& f = r.families[i];
    h += std::string(f.significant ? "<tr class='sig'>" : "<tr>") + "<td><code>" + HtmlEscape(f.family) + "</code></td><td>" +
         f.metric + "</td><td>" + ViewName(f.view) + "</td><td>" + HtmlEscape(f.phase) + "</td><td class='n'>" +
         X(f.ratio) + "</td><td class='n'>" + X(f.ci_low) + " - " + X(f.ci_high) + "</td><td class='n'>" +
         Delta(f.delta_ns_per_step) + "</td><td class='n'>" +
         std::to_string(int(std::lround(100 * f.share_of_step_change))) + "%</td><td class='n'>" +
         std::to_string(f.steps) + "</td><td>" + Verdict(f.significant, f.insufficient) + "</td></tr>";
  }
  h += "</table>";
  if (r.families.size() > kFamilyRows)
    h += "<p class='muted'>" + std::to_string(r.families.size() - kFamilyRows) + " more in compare.json.</p>";
  auto list = [&](const char* title, const std::vector<std::string>& v) {
    h += "<h2>" + std::string(title) + " (" + std::to_string(v.size()) + ")</h2><ul>";
    for (const std::string& k : v) h += "<li><code>" + HtmlEscape(k) + "</code></li>";
    h += "</ul>";
  };
  list("Kernels that appeared", r.kernels_appeared);
  list("Kernels that disappeared", r.kernels_disappeared);
  return h + "</body></html>\n";
}

}  // namespace truffld::diagnose
