// Self-contained HTML report (report.html): inline CSS and SVG, one small inline script, no
// network. Built to stay readable and small for thousands of steps on many ranks.
//
// Sections: the run (false-alarm rate, thresholds, units that could not be judged, with their
// reasons); an overview heat map of ranks x step bins counting abnormal units per view (each
// cell links to its highest-impact unit; with JavaScript a click opens a step-by-step strip of
// that range); per-rank and per-family tables; the straggler table (peer mode); one card per
// abnormal unit, ranked by what it cost its step (root_causes.h UnitCostNs) across all ranks with a share reserved
// for every rank, capped at ReportContext::max_cards; and an index naming every abnormal unit.
// Each card gives the evidence sentence, each faulty operator's observed vs expected time and
// excess in us, its share of the step, its ratio to each peer group, its call chain down to
// kernels and a histogram of its family's costs over the whole run with the unit's own
// instances marked. Legacy modes (pooled, reference, within-step) get simpler cards with Stage
// I's score and probability. Size grows with the cards shown, never with operator instances.
//
// Every abnormal unit has an anchor "r<rank>-s<step>-<v|h>" (rank "x" when unknown): its card
// or, beyond the cap, its index entry. Operator and step names are untrusted: everything is
// HTML-escaped, and a Content-Security-Policy admits only the report's own script (by hash),
// no network and no other script.
// Thread-safety: pure functions over caller-owned data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/requests.h"
#include "truffld/run_stats.h"
#include "stage2/fusion.h"
#include "read/instances.h"

namespace truffld::diagnose {

struct PeerStageResult;

// Log-spaced histogram of one family's costs (one cost kind in one view) over the run.
struct CostHistogram {
  static constexpr int kBins = 40;
  std::string view, family;
  std::string metric;            // "host" | "device" (peer mode), "duration" (legacy: unit totals)
  double lo_ns = 0, hi_ns = 0;   // bins span [lo, hi] log-spaced (lo == hi: a single value)
  std::vector<uint32_t> counts;  // kBins
  uint64_t total = 0;            // values counted
  double median_ns = 0;          // approximate (bin centre holding the median)
  int Bin(double ns) const;      // bin of a value, clamped to [0, kBins)
};

// Values of one faulty operator's family in one unit: the instances marked on its histogram.
struct UnitCosts {
  size_t diagnosis = 0;          // index into the diagnoses
  std::string family, metric;
  uint32_t histogram = 0;        // index into ReportRunData::histograms
  std::vector<float> values_ns;  // the unit's own instances (peer mode) or its total (legacy)
};

// Peer stage figures the report shows beyond the diagnoses (BuildReportRunData).
struct ReportRunData {
  struct Straggler {
    int64_t rank = -1, step_index = 0;
    double caused_ns = 0, step_ns = 0;  // delay it caused; its step's duration
    int last_in = 0, collectives = 0;   // collectives it entered last / matched in the step
    int waiting_ranks = 0;              // units of the step whose wait was mostly for it
    std::string cause;                  // what held the rank in its own vertical view, when known
    bool explained = false;             // its vertical unit blames an operator (a finding of its own)
  };
  bool from_peer = false;
  double alpha = 0;
  double threshold[2] = {0, 0};  // [vertical, horizontal]
  int judged[2] = {0, 0}, flagged[2] = {0, 0}, insufficient[2] = {0, 0};
  // Per view, the empirical null (peer/decision.h) the run was judged against: {0, 1} when the
  // assumed null was kept; blind when a lone slow step could not be flagged under it.
  double null_centre[2] = {0, 0}, null_scale[2] = {1, 1}, best_possible_p[2] = {0, 0};
  bool null_blind[2] = {false, false};
  int64_t timer_resolution_ns = 1;
  double min_impact_share = 0;        // the impact floor: blame saving less of its step is not listed
  double long_step_ratio = 0;         // --long-step-ratio (0: off or unknown)
  std::vector<std::string> run_findings;  // how the run behaves, reported once (patterns, persistent stragglers)
  int warmup_units[2] = {0, 0};       // units whose first use of GPU code cost the impact floor
  double warmup_ns[2] = {0, 0};       // warm-up excess over all units (not judged)
  std::vector<Straggler> stragglers;  // highest delay first
  std::vector<CostHistogram> histograms;
  std::vector<UnitCosts> unit_costs;  // abnormal units' faulty operators
};

struct ReportContext {
  std::string title = "truffld diagnosis";
  std::string input;        // trees path, for the header
  std::string mode;         // Stage I scoring mode
  std::string stage2;       // one line describing Stage II
  std::string metrics_text; // optional evaluation summary
  std::vector<std::string> notes;  // read problems, fallbacks
  // A hang found in the merge's end states (hang/hang.h): its sentence and one line per rank
  // that stopped without a clean exit; empty when every process exited normally.
  std::string hang_sentence;
  const std::vector<RequestSummary>* requests = nullptr;  // the "Requests" section (null: none)
  const RunStats* run_stats = nullptr;  // the merge's run_stats.json, "Run statistics" (null: none)
  std::vector<std::string> hang_lines;
  size_t max_cards = 500;   // abnormal units shown as cards (the rest are in the index)
  const ReportRunData* run = nullptr;  // peer mode extras; null: derived from the diagnoses
  // The merge trace's otherData.time_origin_ns when there is one: cards then give each unit's
  // time in trace.json / diagnosis.trace.json (us since that origin, Perfetto's timestamps).
  std::optional<int64_t> trace_origin_ns;
};

// Peer mode: the run's calibration, stragglers and cost histograms of the families blamed in
// `d` (one diagnosis per unit of `t`, in table order).
ReportRunData BuildReportRunData(const InstanceTable& t, const PeerStageResult& r,
                                 const std::vector<StepDiagnosis>& d);

// Legacy modes (and hand-built diagnoses): histograms of each blamed family's per-unit total
// time (FamilyEvidence::total_time_ns) over the diagnoses, and the run counts they carry.
ReportRunData ReportRunDataFromDiagnoses(const std::vector<StepDiagnosis>& d);

// Escapes & < > " ' and replaces C0 control characters (but tab, LF, CR) with U+FFFD.
std::string HtmlEscape(const std::string& s);

// The anchor id of a unit: "r3-s41-v" ("rx-..." without a rank).
std::string UnitAnchor(const StepEvidence& e);

std::string RenderHtmlReport(const std::vector<StepDiagnosis>& d, const ReportContext& ctx);

}  // namespace truffld::diagnose
