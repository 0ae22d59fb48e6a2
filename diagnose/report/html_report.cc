// report.html: the page, its terms, formatting helpers and the one static script (html_report.h).
#include "report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/html_report_parts.h"
#include "report/root_causes.h"
#include "stage2/llm_cache.h"

namespace truffld::diagnose {

std::string HtmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\t': case '\n': case '\r': out += c; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += "&#xFFFD;";
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string UnitAnchor(const StepEvidence& e) {
  return "r" + (e.rank ? std::to_string(*e.rank) : std::string("x")) + "-s" + std::to_string(e.step_index) +
         "-" + report::ViewLetter(e.view);
}

namespace report {

std::string Num(double v, int decimals) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string Us(double ns) {
  const double us = ns / 1e3;
  const double a = std::abs(us);
  const std::string digits = Num(us, a >= 100 ? 0 : a >= 10 ? 1 : 2);
  // Thousands separators in the integer part.
  const size_t start = digits[0] == '-' ? 1 : 0;
  const size_t end = std::min(digits.find('.'), digits.size());
  std::string out = digits.substr(0, start);
  for (size_t i = start; i < end; ++i) {
    if (i > start && (end - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out + digits.substr(end);
}

std::string Pct(double share) { return Num(100 * share, std::abs(share) < 0.1 ? 1 : 0) + "%"; }

std::string Sci(double p) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2g", p);
  return b;
}

std::string ViewLetter(View view) { return view == View::kHorizontal ? "h" : "v"; }

std::string RankText(const StepEvidence& e) { return e.rank ? std::to_string(*e.rank) : "-"; }

double Impact(const StepDiagnosis& s) {
  if (s.evidence.peer) return UnitCostNs(s);
  double x = 0;
  for (const FaultyOperator& f : s.faulty) x += f.score;
  return x;
}

bool AnyPeer(const std::vector<StepDiagnosis>& d) {
  for (const StepDiagnosis& s : d) {
    if (s.evidence.peer) return true;
  }
  return false;
}

const std::string& Summary(const StepEvidence& e) {
  static const std::string kNone;
  return e.peer ? e.peer->summary : kNone;
}

std::string MetricText(const FaultyOperator& f) { return f.cost ? MetricName(f.cost->metric) : ""; }

std::string InsufficientReason(const StepEvidence& e) {
  static const std::string kMark = "insufficient evidence: ";
  const std::string& summary = Summary(e);
  const size_t at = summary.find(kMark);
  return at == std::string::npos ? (summary.empty() ? "no reason given" : summary)
                                 : summary.substr(at + kMark.size());
}

std::string ScriptHashSource() {
  const std::string hex = Sha256Hex(Script());
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  static const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
    b64 += kB64[(n >> 18) & 63];
    b64 += kB64[(n >> 12) & 63];
    b64 += i + 1 < bytes.size() ? kB64[(n >> 6) & 63] : '=';
    b64 += i + 2 < bytes.size() ? kB64[n & 63] : '=';
  }
  return "'sha256-" + b64 + "'";
}

}  // namespace report

namespace {

constexpr const char* kStyle =
    "body{font-family:system-ui,sans-serif;margin:16px 24px;color:#222;max-width:1400px}"
    "h2{border-bottom:1px solid #ccc;padding-bottom:2px;margin-top:28px}"
    "table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
    "th{background:#f3f3f3;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "pre{background:#f6f6f6;padding:8px;overflow:auto}code{word-break:break-all}"
    "dl.terms dt{font-weight:bold;float:left;clear:left;width:9em}dl.terms dd{margin:0 0 4px 10em}"
    ".card{border:1px solid #bbb;border-left:6px solid #D55E00;border-radius:4px;padding:6px 12px;margin:12px 0}"
    ".card.legacy{border-left-color:#E69F00}.card h3{margin:4px 0;font-size:16px}"
    ".card .ev{margin:4px 0}.op{margin:8px 0 4px 0;padding-top:4px;border-top:1px dashed #ddd}"
    ".chain{font-size:13px;margin:3px 0}"
    ".chain span{background:#eef3fa;border:1px solid #c8d6ea;border-radius:3px;padding:0 4px}"
    ".chain span.self{background:#fbe3d4;border-color:#D55E00}.chain span.k{background:#eee;border-color:#bbb}"
    ".muted{color:#666;font-size:12px}.name{font-family:ui-monospace,monospace;word-break:break-all}"
    ".idx a,.idx span{margin-right:6px;font-size:13px}#card-filter{width:28em}svg text{font-family:sans-serif}"
    ".headline{font-size:17px;background:#fff4ec;border-left:6px solid #D55E00;padding:8px 12px}"
    ".headline.ok{background:#eef6ee;border-left-color:#009E73}td.hint{font-size:12px;color:#444;max-width:34em}"
    ".sw{display:inline-block;width:12px;height:12px;border:1px solid #999;vertical-align:middle;margin:0 3px 0 8px}";

std::string Terms(bool by_cost) {
  std::string t = "<h2 id='terms'>Terms</h2><dl class='terms'>"
      "<dt>unit</dt><dd>one rank's step in one view: (rank, step, view). Verdicts are per unit.</dd>"
      "<dt>view</dt><dd><i>vertical</i>: the operators a rank ran in the step (host ranges and their "
      "device work); <i>horizontal</i>: its communication with other ranks (collectives, send/recv).</dd>"
      "<dt>family</dt><dd>an operator name without call ids (e.g. <span class='name'>aten::mm</span>); "
      "a family has many instances in a step (one per layer, per call).</dd>";
  if (by_cost) {
    t += "<dt>peers</dt><dd>instances that did the same work and so should cost the same: "
         "<i>TP peers</i> (the same operator in the same step on the other tensor-parallel ranks), "
         "<i>similar steps</i> (the same operator on this rank in steps of similar workload), "
         "<i>layers</i> (its siblings in the other layers of the same step).</dd>"
         "<dt>expected</dt><dd>what the peers say it should have cost (their median).</dd>"
         "<dt>excess</dt><dd>observed minus expected time, in microseconds (us); <i>share</i> is the "
         "excess as a part of the step's duration.</dd>"
         "<dt>cost</dt><dd>what an anomaly cost its step: the step time saved without it (the step "
         "replayed with the anomaly at its expected cost), or its excess where the step could not be "
         "replayed. Excess the step never paid (host time while the device still had queued work) is "
         "<i>absorbed</i>. Units, families and ranks are ranked by cost.</dd>"
         "<dt>p-value</dt><dd>how surprising the unit is if nothing was wrong; a unit is abnormal when "
         "its p-value is at or below the view's threshold, chosen (Benjamini-Hochberg) so that at most "
         "the stated false-alarm rate of healthy units is flagged.</dd>"
         "<dt>straggler</dt><dd>the rank that entered a step's collectives last, making the others wait.</dd>";
  } else {
    t += "<dt>score</dt><dd>Stage I's anomaly score A = 1 - rho-bar in [0, 1] (1: far outside the "
         "family's usual behaviour); <i>p(normal)</i> is rho-bar, the confidence that it was normal.</dd>";
  }
  return t + "</dl>";
}

}  // namespace

std::string RenderHtmlReport(const std::vector<StepDiagnosis>& d, const ReportContext& ctx) {
  using namespace report;
  const ReportRunData derived = ctx.run ? ReportRunData{} : ReportRunDataFromDiagnoses(d);
  const ReportRunData& run = ctx.run ? *ctx.run : derived;
  const bool by_cost = run.from_peer || AnyPeer(d);
  const CardPlan plan = PlanCards(d, ctx.max_cards);
  std::string h = "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                  "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
                  "style-src 'unsafe-inline'; img-src data:; script-src " + ScriptHashSource() + "\">"
                  "<meta name='viewport' content='width=device-width'><title>" + HtmlEscape(ctx.title) +
                  "</title><style>" + kStyle + "</style></head><body>";
  h += "<h1 id='top'>" + HtmlEscape(ctx.title) + "</h1><p>Input: <code>" + HtmlEscape(ctx.input) +
       "</code><br>Stage I mode: " + HtmlEscape(ctx.mode) + "<br>Stage II: " + HtmlEscape(ctx.stage2) +
       "</p><p class='muted'>Sections: <a href='#headline'>what is wrong</a> · <a href='#steptime'>step time</a> · "
       "<a href='#run'>the run</a> · <a href='#overview'>overview</a> · "
       "<a href='#ranks'>ranks</a> · <a href='#families'>families</a> · " +
       (run.stragglers.empty() ? std::string() : "<a href='#stragglers'>stragglers</a> · ") +
       "<a href='#cards'>abnormal units</a> · <a href='#index'>index</a> · " +
       (ctx.requests && !ctx.requests->empty() ? "<a href='#requests'>requests</a> · " : "") +
       "<a href='#terms'>terms</a></p>";
  if (!ctx.hang_sentence.empty()) {
    h += "<h2 id='hang'>The job stopped without a clean exit</h2><p class='hang'><b>" + HtmlEscape(ctx.hang_sentence) +
         "</b></p><ul>";
    for (const auto& l : ctx.hang_lines) h += "<li>" + HtmlEscape(l) + "</li>";
    h += "</ul><p class='muted'>From each dump's end state (truffld-merge's summary.json); the same in "
         "hang.json.</p>";
  }
  h += RenderHeadline(d, run, plan);
  h += RenderStepTimePlot(d, plan);
  h += RenderRunSection(d, run, ctx);
  if (!ctx.metrics_text.empty()) {
    h += "<h2>Evaluation against labels</h2><pre>" + HtmlEscape(ctx.metrics_text) + "</pre>";
  }
  h += RenderOverview(d, plan);
  h += RenderRankTable(d, run);
  h += RenderFamilyTable(d, plan);
  h += RenderStragglers(run, d, plan);
  std::vector<bool> used(run.histograms.size(), false);
  const std::string cards = RenderCards(d, run, plan, &used, ctx.trace_origin_ns);
  h += RenderHistogramDefs(run, used) + cards;
  h += RenderIndex(d, plan);
  if (ctx.requests) h += RenderRequests(*ctx.requests);
  if (ctx.run_stats) h += RenderRunStats(*ctx.run_stats);
  if (!ctx.notes.empty()) {
    h += "<h2>Notes</h2><ul>";
    for (const auto& n : ctx.notes) h += "<li>" + HtmlEscape(n) + "</li>";
    h += "</ul>";
  }
  h += Terms(by_cost);
  return h + "<script>" + Script() + "</script></body></html>\n";
}

}  // namespace truffld::diagnose
