// diagnose's one stats table: every value stats.json reports, declared once with its key, JSON
// type and description, as merge's summary counters are (truffld/merge/stats.h).
//
// One X-macro per JSON object of stats.json, rows in no particular order (the writer's objects
// sort their keys). Each row is X(key, type, value, description): `value` is an expression over
// the section writer's parameters, so the writers below are generated from the rows, and so is
// StatsSchemaRows(), which the schema check compares with schemas/stats.schema.json
// (descriptions included; tests/diagnose/unit/stats_table_test.cc).
// Thread-safety: constants and pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "legacy/stage1.h"
#include "peer/stage.h"
#include "read/tree_reader.h"
#include "report/trace_annotate.h"
#include "report/trace_overlay.h"
#include "stage2/llm_stage2.h"

namespace truffld::diagnose {

// stats.json itself: its sections. `value` is never evaluated (main.cc fills each section).
#define TRUFFLD_DIAGNOSE_STATS_SECTIONS(X)                                                                \
  X(input, "input", 0, "The trees read: what was kept and every problem found (stats_input).")           \
  X(reference, "input", 0, "The healthy run's trees with --reference (stats_input).")                \
  X(stage1, "stage1", 0, "The detector's mode; mixture counters of the legacy modes (stats_stage1).")   \
  X(peer, "peer", 0, "The peer detector: rates, thresholds and counts per view, models, stragglers (stats_peer).") \
  X(stage2, "stage2", 0, "Stage II: LLM requests, cache hits, offline decisions, the circuit breaker (stats_stage2).") \
  X(trace, "trace", 0, "diagnosis.trace.json: what was annotated, or why it was not written (stats_trace).") \
  X(seconds, "number", 0, "Wall-clock time of the whole run, in seconds.")

// One read of trees (parameters: path, rs = ReadStats).
#define TRUFFLD_DIAGNOSE_INPUT_STATS(X)                                                                    \
  X(path, "string", path, "The file or merge directory read.")                                           \
  X(lines, "integer", rs.lines, "Non-empty lines seen.")                                                  \
  X(trees, "integer", rs.trees, "Lines accepted as trees.")                                               \
  X(bad_lines, "integer", rs.bad_lines, "Lines that were not JSON, had another schema or lacked fields.") \
  X(instances, "integer", rs.instances, "Operator instances kept.")                                       \
  X(duplicate_instances, "integer", rs.duplicate_instances,                                              \
    "The same operator seen again through another request's tree (merged).")                             \
  X(warnings, "integer", rs.warnings, "Reader warnings (a truncated last line, ...).")                    \
  X(inverted_ranges, "integer", rs.inverted_ranges, "Operator nodes ending before they start (kept, duration 0).") \
  X(graph_instances, "integer", rs.graph_instances, "Instances rebuilt from CUDA-graph nodes' captured_in.") \
  X(outside_instances, "integer", rs.outside_instances,                                                  \
    "Instances of time no operator covers (host gaps, between steps, calls under the step, device idle).")          \
  X(repaired_lines, "integer", rs.repaired_lines, "Lines with invalid UTF-8, read after replacing bad bytes.") \
  X(empty_horizontal, "integer", rs.empty_horizontal,                                                    \
    "Horizontal views with no communication: nothing to judge, so not units.")                           \
  X(too_deep_trees, "integer", rs.too_deep_trees,                                                        \
    "Trees nested past 16,384 JSON levels (about 8,192 ranges): bad lines, each named in problems with its step.") \
  X(step_level_steps, "integer", rs.step_level_steps,                                                   \
    "Steps outside every detail window that recorded no operator range (two-tier capture): judged on step-level evidence only (the whole step, the time between steps, communication).") \
  X(problems, "array", rs.problems, "The first 20 problems, as file:line: problem.")

// The detector's mode and the legacy mixture modes' counters (parameters: mode, s1).
#define TRUFFLD_DIAGNOSE_STAGE1_STATS(X)                                                                   \
  X(mode, "string", mode, "--mode: peer, or a legacy mixture mode (pooled, within-step, reference).")    \
  X(gmm_fits, "integer", s1.gmm_fits, "Legacy modes: mixtures fitted.")                                   \
  X(robust_z_groups, "integer", s1.robust_z_groups, "Legacy modes: families scored by robust z (too few instances).") \
  X(fit_failures, "integer", s1.fit_failures, "Legacy modes: mixture fits that failed.")                   \
  X(missing_in_reference, "integer", s1.missing_in_reference,                                            \
    "Reference mode: families with no model in the healthy run.")                                        \
  X(notes, "array", s1.notes, "Legacy modes: fit failures and fallbacks, for the user.")                  \
  X(models, "array", MixtureModelsJson(s1), "Legacy modes: every mixture's choice (view, family, method, K, BIC).")

// The peer detector over the run (parameters: t, r = PeerStageResult).
#define TRUFFLD_DIAGNOSE_PEER_STATS(X)                                                                     \
  X(false_alarm_rate, "number", r.decision.alpha, "--false-alarm-rate: the Benjamini-Hochberg level per view.") \
  X(min_impact_share, "number", r.decision.min_impact_share,                                             \
    "--min-impact-share: the share of its step an abnormal unit's blamed operators must explain.")       \
  X(long_step_ratio, "number", r.decision.long_step_ratio,                                               \
    "--long-step-ratio: a unit this many times its similar steps' median cycle (duration and the time between steps before it) keeps the assumed null (0: off).") \
  X(vertical, "peer_view", PeerViewStatsJson(r, View::kVertical), "The vertical view (stats_peer_view).") \
  X(horizontal, "peer_view", PeerViewStatsJson(r, View::kHorizontal), "The horizontal view (stats_peer_view).") \
  X(tests, "integer", r.rows.size(), "Tested costs (instance and family rows).")                          \
  X(timer_resolution_ns, "integer", r.timer_resolution_ns, "Detected tick of the trace's timestamps, in ns.") \
  X(residual_fits, "integer", r.scoring.fits, "Residual groups modelled by a mixture.")                   \
  X(residual_fallbacks, "integer", r.scoring.fallbacks, "Residual groups too small for a mixture (median and MAD).") \
  X(residual_models, "array", ResidualModelsJson(r), "Every residual model: its group, method, components.") \
  X(stragglers, "array", StragglersJson(t, r), "Per logical step, the rank that made the others wait most, with the cause.") \
  X(persistent_stragglers, "array", PersistentStragglersJson(r),                                         \
    "Ranks that made their group wait in collectives in most logical steps (a run finding), with the typical delay.") \
  X(pipeline_imbalance, "array", PipelinesJson(r),                                                      \
    "Pipeline replicas with a stage longer than the others (a run finding): each stage's ranks, hosts and median device compute a step (load_ns), the longest stage (index), the steps compared and those it was longest in, the median saving of an even split (saving_ns) against the median step (step_ns, share).") \
  X(run_findings, "array", RunFindingsJson(t, r),                                                        \
    "Cost patterns most steps of a lane share, reported once: lane, units, typical and range of excess, cost (impact_ns: the step time it cost; absorbed_ns: the excess the steps never paid), families, sentence.") \
  X(slower_regimes, "array", SlowRegimesJson(t, r),                                                     \
    "Slower modes that a quarter or more of a family's similar steps share, which scoring takes as a normal regime and so flags no step for (a run finding): per lane and family, the units where it cost at least the impact floor of their step (its extra time over the main mode, or less where the step's cycle was not that much longer than its similar steps'), the typical and range of the extra time, the median share of those steps it cost, the run's total (total_ns) and what the steps did not pay (absorbed_ns), their step indices (steps) and a sentence.")

// One view of the peer detector (parameters: r, v = View, i = its index).
#define TRUFFLD_DIAGNOSE_PEER_VIEW_STATS(X)                                                                \
  X(threshold, "number", r.decision.views[i].threshold,                                                        \
    "The run's Benjamini-Hochberg p-value cut on the raw scale (0: no unit flagged).")                   \
  X(calibrated_threshold, "number", r.decision.views[i].calibrated_threshold,                                  \
    "The same cut on the scale of the run's own null (what decides).")                                    \
  X(judged, "integer", r.decision.views[i].judged, "Units with at least one judged test.")                       \
  X(abnormal, "integer", r.decision.views[i].flagged, "Units labelled abnormal.")                                \
  X(insufficient_evidence, "integer", r.decision.views[i].insufficient, "Units with no peers to judge them by.") \
  X(below_impact_floor, "integer", r.decision.views[i].immaterial,                                              \
    "Units significant but labelled normal: their blame cost the step less than the impact floor.")      \
  X(run_pattern, "integer", r.decision.views[i].run_pattern,                                              \
    "Units significant but labelled normal: ordinary members of a run finding.")                         \
  X(long_steps, "integer", r.decision.views[i].long_steps,                                                \
    "Judged units that took at least --long-step-ratio times their similar steps: judged on the assumed null.") \
  X(warmup, "object", WarmupStatsJson(r.warmup_tally, i),                                                 \
    "First use of GPU code, reported and not judged: units, units above the impact floor, excess ns.")   \
  X(null, "object", NullStatsJson(r.decision, i),                                                         \
    "The null the units were judged against: centre and scale on the z scale ({0, 1}: the assumed one), " \
    "the best p-value a unit could reach, and whether a lone slow step could be flagged.")

// Stage II (parameter: s = StageTwoStats).
#define TRUFFLD_DIAGNOSE_STAGE2_STATS(X)                                                                   \
  X(steps, "integer", s.steps, "Decisions returned (one per unit).")                                      \
  X(requests, "integer", s.requests, "HTTP requests sent, retries included.")                             \
  X(retries, "integer", s.retries, "Requests that were retries (429, 5xx, transport, validation).")       \
  X(prompt_tokens, "integer", s.prompt_tokens, "Prompt tokens the server reported (0 when it reports none).") \
  X(completion_tokens, "integer", s.completion_tokens, "Completion tokens the server reported.")          \
  X(cache_hits, "integer", s.cache_hits, "Units answered from the on-disk cache.")                        \
  X(llm_decisions, "integer", s.llm_decisions, "Units answered by the model in this run.")                 \
  X(offline_decisions, "integer", s.offline_decisions, "Units decided by the offline policy by design.") \
  X(fallbacks, "integer", s.fallbacks, "Units where the LLM path failed and the offline policy answered.") \
  X(errors, "integer", s.errors, "Failed HTTP attempts (transport errors and non-2xx replies).")         \
  X(invalid_answers, "integer", s.invalid_answers, "Model answers that failed schema validation.")        \
  X(dropped_names, "integer", s.dropped_names, "Names in answers that were not in the input.")            \
  X(backoff_ms, "integer", s.backoff_ms, "Time slept between retries, in ms.")                            \
  X(circuit_breaker, "object", BreakerStatsJson(s),                                                       \
    "Whether the endpoint was given up (tripped), the units then decided offline, and why.")             \
  X(config, "string", config, "The Stage II configuration in words (endpoint redacted).")

// diagnosis.trace.json (parameters: input, overlay, ts = AnnotateStats; the last five only
// when it was written, `error` only when it was not).
#define TRUFFLD_DIAGNOSE_TRACE_STATS(X)                                                                    \
  X(input, "string", input, "truffld-merge's trace.json that was annotated.")                             \
  X(output, "string", "diagnosis.trace.json", "The annotated copy, in the output directory.")             \
  X(abnormal_units, "integer", overlay.units, "Abnormal units drawn as slices.")                           \
  X(insufficient_evidence_units, "integer", overlay.insufficient, "Units without peers drawn as grey slices.") \
  X(markers, "integer", overlay.markers, "Faulty-operator markers drawn.")                                 \
  X(flows, "integer", ts.flows, "Markers linked to their operator slice by a flow.")                       \
  X(markers_unlinked, "integer", ts.markers_unlinked, "Markers whose operator slice was not found.")       \
  X(markers_replayed, "integer", ts.markers_replayed,                                                     \
    "Markers of CUDA-graph replays (no operator slice to point at).")                                     \
  X(markers_outside, "integer", ts.markers_outside,                                                       \
    "Markers of time no operator covers: host gaps, the time between steps, calls under the step, device idle.")       \
  X(steps_annotated, "integer", ts.steps_annotated, "Step slices given their verdicts.")                  \
  X(events_copied, "integer", ts.events, "Lines of the merge's trace copied.")                            \
  X(error, "string", "", "Why diagnosis.trace.json was not written (a trace found beside the trees only).")

// One row of the table, for the schema check: its object ("stats", "stats_input", ...), key,
// JSON type (or the object it holds) and description.
struct StatsRow {
  const char* object;
  const char* key;
  const char* type;
  const char* description;
};
std::vector<StatsRow> StatsSchemaRows();

// The section writers, generated from the rows above.
nlohmann::json InputStatsJson(const std::string& path, const ReadStats& rs);
nlohmann::json StageOneStatsJson(const std::string& mode, const StageOneResult& s1);
nlohmann::json PeerStatsJson(const InstanceTable& t, const PeerStageResult& r);
nlohmann::json StageTwoStatsJson(const StageTwoStats& s, const std::string& config);
// `error`: why the trace was not written (then `ts` is not read), or nullptr when it was.
nlohmann::json TraceStatsJson(const std::string& input, const TraceOverlay& overlay, const AnnotateStats& ts,
                              const std::string* error);

}  // namespace truffld::diagnose
