// Machine- and human-readable outputs: diagnosis.jsonl lines, the stdout table, feature export.
//
// diagnosis.jsonl follows schemas/diagnosis.schema.json (schema "truffld.diagnosis/1"): one
// object per (rank, step, view) with the fused label, faulty operators with scores and parent
// chain, Stage I candidates and threshold, and Stage II's raw decision and its source.
// The JSON builders and formatters are pure; the Write* functions are thin file adapters.
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stage2/fusion.h"
#include "read/instances.h"
#include "report/metrics.h"
#include "truffld/status.h"

namespace truffld::diagnose {

// `trace_origin_ns`: the annotated trace's time origin (ns); with it each line also gives the
// step's time in that trace ("trace_start_us", "trace_end_us": us since the origin, as the
// trace's "ts"), so a unit can be found in Perfetto.
nlohmann::json DiagnosisToJson(const StepDiagnosis& d, const std::string& mode,
                               std::optional<int64_t> trace_origin_ns = std::nullopt);
Status WriteDiagnosisJsonl(const std::string& path, const std::vector<StepDiagnosis>& d,
                           const std::string& mode, std::optional<int64_t> trace_origin_ns = std::nullopt);

// Table of abnormal steps and their faulty operators (at most max_rows steps), plus a count line.
std::string FormatAbnormalTable(const std::vector<StepDiagnosis>& d, size_t max_rows = 50);

// The units by label, for the stdout table and the report's headline.
struct UnitTally {
  size_t abnormal = 0, judged = 0, insufficient = 0;
  const StepDiagnosis* first_unjudged = nullptr;  // the first unit with insufficient evidence
};
UnitTally TallyUnits(const std::vector<StepDiagnosis>& d);
// Why the first unjudged unit had insufficient evidence (its peer summary; empty: none).
std::string UnjudgedReason(const UnitTally& t);
// When no unit was judged, the sentence the table and the headline lead with, not an all-clear:
// "No unit could be judged: all <insufficient><what> had insufficient evidence (<where>), e.g.
// <reason>." (`reason` escaped by the caller for its medium; ", e.g." left out when empty).
std::string NoUnitJudgedSentence(const UnitTally& t, const std::string& what, const std::string& where,
                                 const std::string& reason);

// Writes phi(x) per instance: keys (rank, step_index, view, family, layer, start, end), raw
// features, Stage I rho, and, when labels are given, the step label and whether the instance's
// family is labelled faulty. CSV when the path ends in ".csv", JSONL otherwise.
Status WriteFeatures(const std::string& path, const InstanceTable& t,
                     const std::vector<double>& rho, const LabelSet* labels);
// The same, CSV or JSONL as told (the caller may write to a temporary name first).
Status WriteFeatures(const std::string& path, bool csv, const InstanceTable& t,
                     const std::vector<double>& rho, const LabelSet* labels);
// Whether a path names a CSV file (".csv").
bool IsCsvPath(const std::string& path);

// Peer mode: every tested cost (TestRow) with its expectations and p-values, one CSV line each:
// rank, step_index, view, family, level, metric, observed_ns, expected and peers per source,
// p per source, p_value, unit verdict. For analysis and for checking a verdict by hand.
struct PeerStageResult;
struct StragglerRow;
struct PersistentStraggler;
Status WriteTests(const std::string& path, const InstanceTable& t, const PeerStageResult& r);
// Three stdout lines for peer mode: the false-alarm rate, then per view the units judged,
// abnormal and with insufficient evidence, and the stragglers found; then a "note:" line per view
// judged against its own run (RunCalibrationNote), and one when warm-up (first use of GPU code)
// cost any unit at least the impact floor (no trailing newline).
std::string FormatPeerSummary(const PeerStageResult& r);
// What a view's verdicts mean when its run is judged against itself (the empirical null of
// decision.h is active: every step more surprising than the models expect): one sentence naming
// the view, the null's centre and spread, and, when `blind`, that a lone slow step cannot be
// flagged (best_possible_p: the strongest evidence's q), so that "no abnormal step" is not read
// as "every step healthy", and, when `long_step_ratio` > 0, that a step that long against its
// similar steps is judged on the assumed null. Empty when the assumed null was kept (centre 0, scale 1).
std::string RunCalibrationNote(const std::string& view, double centre, double scale, bool blind,
                               double best_possible_p, double long_step_ratio = 0);
// Why a straggler was late, from its own vertical unit in the same step: "compute", "copy" or
// "host" (its top blamed family's cost), or "no abnormal operator on the rank".
std::string StragglerCause(const InstanceTable& t, const PeerStageResult& r, const StragglerRow& s);
// The straggler's vertical unit in its step (SIZE_MAX: none).
size_t StragglerVerticalUnit(const InstanceTable& t, const StragglerRow& s);
// "rank 3 entered the collectives last in 38 of 40 steps: the other ranks waited for it typically
// 412 us (4.1% of its step), 16.5 ms in all; ...": a persistent straggler as one run finding.
std::string PersistentStragglerSentence(const PersistentStraggler& p);

// CSV field quoting (RFC 4180): quotes when needed, doubles inner quotes.
std::string CsvField(const std::string& s);

}  // namespace truffld::diagnose
