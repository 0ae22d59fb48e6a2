// Internal pieces of report.html (html_report*.cc): formatting helpers, the palette and the
// section renderers. Every function returns markup with all caller text HTML-escaped.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/html_report.h"

namespace truffld::diagnose::report {

// Okabe-Ito colours (distinguishable with every common colour-vision deficiency).
inline constexpr const char* kBlue = "#0072B2";
inline constexpr const char* kSky = "#56B4E9";
inline constexpr const char* kOrange = "#E69F00";
inline constexpr const char* kVermillion = "#D55E00";
inline constexpr const char* kGrey = "#e4e4e4";
// Viridis, light to dark (reversed so that more abnormal units read darker).
inline constexpr const char* kViridis[] = {"#fde725", "#a0da39", "#4ac16d", "#1fa187",
                                           "#277f8e", "#365c8d", "#46327e", "#440154"};
inline constexpr int kViridisSteps = 8;

std::string Num(double v, int decimals = 1);  // fixed-point, for SVG coordinates
std::string Us(double ns);                     // microseconds with thousands separators
std::string Pct(double share);                 // "12.3%"
std::string Sci(double p);                     // "3.2e-05"
std::string ViewLetter(View view);  // "v" | "h"
std::string RankText(const StepEvidence& e);      // "3" or "-"

// Impact of an abnormal unit: what it cost its step (peer mode, UnitCostNs: the step time saved
// without it, its blame's summed excess where the step could not be replayed) or its summed
// score (legacy).
double Impact(const StepDiagnosis& s);
// Whether any unit was judged by the peer detector (tables and cards then rank by time cost).
bool AnyPeer(const std::vector<StepDiagnosis>& d);
// The peer detector's sentence for the unit; "" in the legacy modes.
const std::string& Summary(const StepEvidence& e);
// "host" / "device", or "" when the operator has no peer cost.
std::string MetricText(const FaultyOperator& f);
// "why" of an insufficient-evidence unit (the part of its summary after "insufficient evidence: ").
std::string InsufficientReason(const StepEvidence& e);

// Cards: which abnormal units get one (ranked by impact, each rank keeps a share) and the
// anchors; `ids` is filled for every abnormal unit (diagnosis index -> anchor).
struct CardPlan {
  std::vector<size_t> cards;            // diagnosis indices, highest impact first
  std::vector<size_t> abnormal;         // every abnormal unit, highest impact first
  std::vector<std::string> ids;         // per diagnosis ("" when not abnormal)
  std::vector<bool> has_card;           // per diagnosis
  size_t per_rank_reserved = 0;
};
CardPlan PlanCards(const std::vector<StepDiagnosis>& d, size_t max_cards);

// What is wrong: one sentence with the run's cost, the root causes with their fault class and
// what to check, and how the run behaves (html_report_headline.cc).
std::string RenderHeadline(const std::vector<StepDiagnosis>& d, const ReportRunData& run, const CardPlan& plan);
// Per rank, step durations and the time between steps over the run, verdicts marked.
std::string RenderStepTimePlot(const std::vector<StepDiagnosis>& d, const CardPlan& plan);
std::string RenderRunSection(const std::vector<StepDiagnosis>& d, const ReportRunData& run,
                             const ReportContext& ctx);
std::string RenderOverview(const std::vector<StepDiagnosis>& d, const CardPlan& plan);
std::string RenderRankTable(const std::vector<StepDiagnosis>& d, const ReportRunData& run);
std::string RenderFamilyTable(const std::vector<StepDiagnosis>& d, const CardPlan& plan);
std::string RenderStragglers(const ReportRunData& run, const std::vector<StepDiagnosis>& d,
                             const CardPlan& plan);
std::string RenderHistogramDefs(const ReportRunData& run, const std::vector<bool>& used);
// `trace_origin_ns`: with it, each card says where its step lies in the merge trace.
std::string RenderCards(const std::vector<StepDiagnosis>& d, const ReportRunData& run,
                        const CardPlan& plan, std::vector<bool>* used_histograms,
                        std::optional<int64_t> trace_origin_ns = std::nullopt);
std::string RenderIndex(const std::vector<StepDiagnosis>& d, const CardPlan& plan);
// "Requests": TTFT and TPOT percentiles, the requests abnormal steps cost most, the slowest to
// their first token ("" when no step named a request).
std::string RenderRequests(const std::vector<RequestSummary>& r);
// "Run statistics": kernel time, GPU idle inside steps, launch latency, compute/communication
// overlap ("" when the run has no kernel and no step with device detail).
std::string RenderRunStats(const RunStats& s);

// The report's only script (static text: no data, no names) and its CSP hash source.
const std::string& Script();
std::string ScriptHashSource();  // "'sha256-<base64>'"

}  // namespace truffld::diagnose::report
