// report.html's "Requests" section (html_report_parts.h).
#include <algorithm>

#include "peer/format_ns.h"
#include "report/html_report_parts.h"

namespace truffld::diagnose::report {
namespace {

constexpr size_t kListed = 10;

std::string Row(const RequestSummary& r) {
  auto opt = [](const auto& v) { return v ? FormatNs(double(*v)) : std::string("-"); };
  return "<tr><td><code>" + HtmlEscape(r.id) + "</code></td><td>" + std::to_string(r.steps.size()) + "</td><td>" +
         opt(r.ttft_ns) + "</td><td>" + opt(r.tpot_ns) + "</td><td>" + FormatNs(double(r.between_steps_ns)) +
         "</td><td>" + (r.impact_ns > 0 ? FormatNs(r.impact_ns) : std::string("-")) + "</td><td>" + HtmlEscape(r.reason) +
         "</td></tr>";
}

std::string Table(const std::string& title, std::vector<const RequestSummary*> rows) {
  if (rows.empty()) return {};
  std::string h = "<h3>" + HtmlEscape(title) + "</h3><table><tr><th>request</th><th>steps</th><th>TTFT</th>"
                  "<th>TPOT</th><th>between steps</th><th>abnormal impact</th><th>why</th></tr>";
  for (const RequestSummary* r : rows) h += Row(*r);
  return h + "</table>";
}

}  // namespace

std::string RenderRequests(const std::vector<RequestSummary>& r) {
  if (r.empty()) return {};
  const RequestPercentiles p = RequestTimePercentiles(r);
  std::string h = "<h2 id='requests'>Requests</h2><p>" + std::to_string(p.requests) +
                  " requests named by steps (requests.jsonl has every one). Times run from a request's first step: "
                  "queueing before it was scheduled is not in the trace.</p><table><tr><th></th><th>requests</th>"
                  "<th>p50</th><th>p90</th><th>p99</th></tr>";
  h += "<tr><td>time to first token (TTFT)</td><td>" + std::to_string(p.with_ttft) + "</td><td>" + FormatNs(p.ttft_p50) +
       "</td><td>" + FormatNs(p.ttft_p90) + "</td><td>" + FormatNs(p.ttft_p99) + "</td></tr>";
  h += "<tr><td>time per output token (TPOT)</td><td>" + std::to_string(p.with_tpot) + "</td><td>" +
       FormatNs(p.tpot_p50) + "</td><td>" + FormatNs(p.tpot_p90) + "</td><td>" + FormatNs(p.tpot_p99) + "</td></tr></table>";
  std::vector<const RequestSummary*> hit, slow;
  for (const RequestSummary& s : r) {
    if (s.impact_ns > 0) hit.push_back(&s);
    if (s.ttft_ns) slow.push_back(&s);
  }
  std::sort(hit.begin(), hit.end(), [](auto* a, auto* b) { return a->impact_ns > b->impact_ns; });
  std::sort(slow.begin(), slow.end(), [](auto* a, auto* b) { return *a->ttft_ns > *b->ttft_ns; });
  if (hit.size() > kListed) hit.resize(kListed);
  if (slow.size() > kListed) slow.resize(kListed);
  h += Table("Requests abnormal steps cost most", hit);
  h += Table("Slowest to their first token", slow);
  return h;
}

}  // namespace truffld::diagnose::report
