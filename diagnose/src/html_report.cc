// HTML report rendering with inline SVG plots.
#include "truffld/diagnose/html_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace truffld::diagnose {
namespace {

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// One row per (rank, view); each step a cell at its step_index, red if abnormal.
std::string TimelineSvg(const std::vector<StepDiagnosis>& d) {
  std::map<std::pair<long long, std::string>, std::vector<const StepDiagnosis*>> rows;
  long long max_step = 0;
  for (const auto& s : d) {
    rows[{s.evidence.rank.value_or(-1), s.evidence.view}].push_back(&s);
    max_step = std::max<long long>(max_step, s.evidence.step_index);
  }
  const double left = 150, width = 900, row_h = 22;
  double cell = std::max(1.0, width / static_cast<double>(max_step + 1));
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" + Num(left + width + 10) +
                    "' height='" + Num(row_h * static_cast<double>(rows.size()) + 30) + "'>";
  double y = 5;
  for (const auto& [key, steps] : rows) {
    std::string label = (key.first >= 0 ? "rank " + std::to_string(key.first) : std::string("rank -")) + " " + key.second;
    svg += "<text x='4' y='" + Num(y + 15) + "' font-size='12'>" + HtmlEscape(label) + "</text>";
    for (const StepDiagnosis* s : steps) {
      double x = left + cell * static_cast<double>(s->evidence.step_index);
      svg += "<rect x='" + Num(x) + "' y='" + Num(y) + "' width='" + Num(std::max(1.0, cell - 0.5)) +
             "' height='" + Num(row_h - 4) + "' fill='" + (s->abnormal ? "#d62728" : "#2ca02c") +
             "'><title>step " + std::to_string(s->evidence.step_index) + ": " +
             (s->abnormal ? "abnormal" : "normal") + "</title></rect>";
    }
    y += row_h;
  }
  svg += "<text x='" + Num(left) + "' y='" + Num(y + 15) + "' font-size='11'>step index 0 .. " +
         std::to_string(max_step) + "</text></svg>";
  return svg;
}

// Strip plot of each family's score A over steps, for the families that matter most.
std::string DistributionsSvg(const std::vector<StepDiagnosis>& d, size_t max_families) {
  struct Pt { double score; bool candidate, faulty; };
  std::map<std::string, std::vector<Pt>> fam;
  std::map<std::string, double> peak;
  for (const auto& s : d) {
    std::set<std::string> faulty;
    for (const auto& f : s.faulty) faulty.insert(f.family);
    for (const auto& f : s.evidence.families) {
      std::string key = s.evidence.view.substr(0, 1) + ": " + f.family;
      fam[key].push_back({f.score, f.candidate, faulty.count(f.family) > 0});
      peak[key] = std::max(peak[key], f.score + (faulty.count(f.family) ? 2.0 : 0.0));
    }
  }
  std::vector<std::pair<double, std::string>> order;
  for (auto& [k, v] : peak) order.push_back({-v, k});
  std::sort(order.begin(), order.end());
  if (order.size() > max_families) order.resize(max_families);
  const double left = 320, width = 600, row_h = 20;
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" + Num(left + width + 20) +
                    "' height='" + Num(row_h * static_cast<double>(order.size()) + 40) + "'>";
  double y = 10;
  for (const auto& [neg, key] : order) {
    std::string name = key.size() > 48 ? key.substr(0, 45) + "..." : key;
    svg += "<text x='4' y='" + Num(y + 13) + "' font-size='11'>" + HtmlEscape(name) + "</text>";
    svg += "<line x1='" + Num(left) + "' x2='" + Num(left + width) + "' y1='" + Num(y + 9) +
           "' y2='" + Num(y + 9) + "' stroke='#ddd'/>";
    for (const Pt& p : fam[key]) {
      const char* color = p.faulty ? "#d62728" : p.candidate ? "#ff7f0e" : "#1f77b4";
      svg += "<circle cx='" + Num(left + width * std::clamp(p.score, 0.0, 1.0)) + "' cy='" +
             Num(y + 9) + "' r='" + (p.faulty ? "4" : "2.5") + "' fill='" + color +
             "' fill-opacity='0.6'/>";
    }
    y += row_h;
  }
  for (int t = 0; t <= 4; ++t) {
    double x = left + width * t / 4.0;
    svg += "<text x='" + Num(x - 8) + "' y='" + Num(y + 20) + "' font-size='10'>" + Num(t / 4.0) + "</text>";
  }
  svg += "</svg>";
  return svg;
}

// Boxes from the outermost parent down to the faulty operator.
std::string ChainSvg(const FaultyOperator& f) {
  std::vector<std::string> boxes(f.parent_chain.rbegin(), f.parent_chain.rend());
  boxes.push_back(f.family);
  const double bw = 210, bh = 24, gap = 18;
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" +
                    Num((bw + gap) * static_cast<double>(boxes.size())) + "' height='" + Num(bh + 4) + "'>";
  for (size_t i = 0; i < boxes.size(); ++i) {
    double x = (bw + gap) * static_cast<double>(i);
    bool last = i + 1 == boxes.size();
    std::string name = boxes[i].size() > 30 ? boxes[i].substr(0, 27) + "..." : boxes[i];
    svg += "<rect x='" + Num(x) + "' y='2' width='" + Num(bw) + "' height='" + Num(bh) + "' rx='4' fill='" +
           (last ? "#fdd" : "#eef") + "' stroke='#888'><title>" + HtmlEscape(boxes[i]) + "</title></rect>";
    svg += "<text x='" + Num(x + 6) + "' y='18' font-size='11'>" + HtmlEscape(name) + "</text>";
    if (!last) {
      svg += "<line x1='" + Num(x + bw) + "' x2='" + Num(x + bw + gap) + "' y1='14' y2='14' stroke='#888'/>";
    }
  }
  return svg + "</svg>";
}

}  // namespace

std::string HtmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string RenderHtmlReport(const std::vector<StepDiagnosis>& d, const ReportContext& ctx) {
  size_t abnormal = 0;
  for (const auto& s : d) abnormal += s.abnormal;
  std::string h = "<!DOCTYPE html><html><head><meta charset='utf-8'><title>" + HtmlEscape(ctx.title) +
                  "</title><style>body{font-family:sans-serif;margin:20px}table{border-collapse:collapse}"
                  "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}pre{background:#f6f6f6;padding:8px}"
                  "</style></head><body>";
  h += "<h1>" + HtmlEscape(ctx.title) + "</h1><p>Input: <code>" + HtmlEscape(ctx.input) +
       "</code><br>Stage I mode: " + HtmlEscape(ctx.mode) + "<br>Stage II: " + HtmlEscape(ctx.stage2) +
       "<br><b>" + std::to_string(abnormal) + "</b> abnormal of " + std::to_string(d.size()) +
       " (rank, step, view) units.</p>";
  if (!ctx.metrics_text.empty()) h += "<h2>Evaluation</h2><pre>" + HtmlEscape(ctx.metrics_text) + "</pre>";
  h += "<h2>Step timeline</h2><p>Green: normal, red: abnormal.</p>" + TimelineSvg(d);
  h += "<h2>Family score distributions</h2><p>Each dot is one step's score A = 1 - rho-bar "
       "(0 left, 1 right); orange: Stage I candidate, red: faulty after fusion. v: vertical, h: horizontal.</p>" +
       DistributionsSvg(d, 30);
  h += "<h2>Faulty operators and their call chains</h2>";
  size_t shown = 0;
  for (const auto& s : d) {
    if (!s.abnormal) continue;
    if (++shown > 100) { h += "<p>(further abnormal steps omitted; see diagnosis.jsonl)</p>"; break; }
    std::string rank = s.evidence.rank ? std::to_string(*s.evidence.rank) : "-";
    h += "<h3>rank " + rank + ", step " + std::to_string(s.evidence.step_index) + " (" +
         HtmlEscape(s.evidence.view) + ", " + HtmlEscape(s.evidence.phase) + ")</h3><p>" +
         HtmlEscape(s.decision.rationale) + " [" + DecisionSourceName(s.decision.source) + "]</p>";
    for (const auto& f : s.faulty) {
      char buf[160];
      std::snprintf(buf, sizeof buf, " score %.3f, p(normal) %.2e, %d instances, %s", f.score,
                    f.probability, f.instances, f.method.c_str());
      h += "<div><b>" + HtmlEscape(f.family) + "</b>" + HtmlEscape(buf) + "<br>" + ChainSvg(f) + "</div>";
    }
  }
  if (shown == 0) h += "<p>None.</p>";
  if (!ctx.notes.empty()) {
    h += "<h2>Notes</h2><ul>";
    for (const auto& n : ctx.notes) h += "<li>" + HtmlEscape(n) + "</li>";
    h += "</ul>";
  }
  return h + "</body></html>\n";
}

}  // namespace truffld::diagnose
