// truffld-diagnose: which steps were abnormal and which operators are at fault.
//
// Reads trees.jsonl from truffld-merge, compares operator instances with their peers (Stage I,
// peer mode by default; the mixture modes are kept for comparison), confirms per step with an LLM or the offline policy (Stage II), fuses, and writes
// diagnosis.jsonl, report.html, diagnosis.trace.json, stats.json (and metrics.json with --labels)
// into OUTDIR.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>

#include "truffld/atomic_file.h"
#include "truffld/cli.h"
#include "truffld/cli_parse.h"
#include "truffld/output_lock.h"
#include "report/html_report.h"
#include "report/output.h"
#include "report/stats_table.h"
#include "report/step_features.h"
#include "run/pipeline.h"
#include "compare/compare.h"
#include "report/compare_html.h"
#include "hang_cli.h"
#include "merge_files.h"
#include "help_text.h"
#include "options.h"
#include "trace_output.h"
#include "read/tree_reader.h"
#include "truffld/terminal_text.h"

namespace td = truffld::diagnose;
using truffld::Result;

namespace {

using td::Args;

td::ScoringMode ParseMode(const std::string& m) {
  if (m == "peer") return td::ScoringMode::kPeer;
  if (m == "within-step") return td::ScoringMode::kWithinStep;
  if (m == "reference") return td::ScoringMode::kReference;
  return td::ScoringMode::kPooled;
}

int Fail(int code, const std::string& msg) {
  std::fprintf(stderr, "truffld-diagnose: %s\n", truffld::EscapeForTerminal(msg).c_str());
  return code;
}

Result<td::InstanceTable> Load(const std::string& path, const char* what, nlohmann::json* stats,
                               bool quiet, const Args& a, truffld::Progress* progress) {
  td::TreeReader reader;
  reader.set_graph_vertical_ops(a.graph_vertical_ops);
  reader.set_outside_time(a.outside_operators);
  truffld::Status st = [&] {
    truffld::ProgressTimer timer(*progress, std::string("reading ") + what + " " + path + "...");
    return reader.Read(path);
  }();
  if (!st.ok()) {
    (*stats)[what] = td::InputStatsJson(path, reader.stats());
    return st;
  }
  td::InstanceTable table = reader.Finish();  // adds the time no operator covers to the counts
  const td::ReadStats& rs = reader.stats();
  (*stats)[what] = td::InputStatsJson(path, rs);
  if (rs.repaired_lines) {
    std::fprintf(stderr, "%s: %llu lines had invalid UTF-8 (bad bytes read as U+FFFD)\n", what,
                 (unsigned long long)rs.repaired_lines);
  }
  if (rs.inverted_ranges) {
    std::fprintf(stderr, "%s: %llu operator ranges end before they start (kept with duration 0)\n",
                 what, (unsigned long long)rs.inverted_ranges);
  }
  if (rs.too_deep_trees) {
    std::fprintf(stderr, "%s: %llu trees nested too deep to read were skipped (each named below with its step)\n",
                 what, (unsigned long long)rs.too_deep_trees);
  }
  if (!quiet || rs.bad_lines || rs.warnings) {
    std::fprintf(stderr, "%s: %llu trees, %llu operator instances (%llu from CUDA-graph replays, %llu for "
                 "time no operator covers, %llu shared duplicates merged), %llu bad lines, %llu warnings\n", what,
                 (unsigned long long)rs.trees, (unsigned long long)rs.instances,
                 (unsigned long long)rs.graph_instances, (unsigned long long)rs.outside_instances,
                 (unsigned long long)rs.duplicate_instances,
                 (unsigned long long)rs.bad_lines, (unsigned long long)rs.warnings);
  }
  for (const auto& p : rs.problems) std::fprintf(stderr, "  %s\n", truffld::EscapeForTerminal(p).c_str());
  if (rs.trees == 0) return truffld::ParseError(path + ": no usable trees (see the problems above)");
  return table;
}

// What report.html says about the run beside the diagnoses: its input, modes, notes (Stage I's
// and the input's problems) and the trace's time origin.
td::ReportContext MakeReportContext(const Args& a, const std::string& stage2, const std::string& metrics_text,
                                    const std::vector<std::string>& notes, const nlohmann::json& stats,
                                    const td::TraceChoice& trace) {
  td::ReportContext ctx;
  ctx.input = a.input;
  ctx.mode = a.mode;
  ctx.stage2 = stage2;
  ctx.metrics_text = metrics_text;
  ctx.max_cards = a.report_cards;
  ctx.notes = notes;
  ctx.trace_origin_ns = trace.time_origin_ns;
  for (const auto& p : stats["input"]["problems"]) ctx.notes.push_back(p.get<std::string>());
  return ctx;
}

// The hang analysis of the merge's summary.json when some dump stopped without a clean exit
// (printed); nullopt when every process exited normally or there is no summary.json.
std::optional<td::HangRun> StoppedDumps(const Args& a) {
  auto hang = td::AnalyseHang(a.input);
  if (!hang.ok()) {
    if (hang.status().code() != truffld::StatusCode::kNotFound)
      std::fprintf(stderr, "truffld-diagnose: warning: no hang check: %s\n",
                   truffld::EscapeForTerminal(hang.status().message()).c_str());
    return std::nullopt;
  }
  if (hang->report.status == td::HangStatus::kComplete) return std::nullopt;
  std::fprintf(stderr, "truffld-diagnose: the dumps stopped without a clean exit (%s): %s\n",
               td::HangStatusName(hang->report.status), truffld::EscapeForTerminal(hang->report.sentence).c_str());
  return std::move(hang).value();
}

// hang.json for a run whose dumps stopped, with its finding in the report.
std::optional<nlohmann::json> AddHang(const std::optional<td::HangRun>& hang, td::ReportContext* ctx) {
  if (!hang) return std::nullopt;
  ctx->hang_sentence = hang->report.sentence;
  ctx->hang_lines = hang->report.rank_lines;
  return td::HangJson(hang->ends, hang->report);
}

// Writes every output under a temporary name and renames them into place together (see
// truffld/atomic_file.h); --no-html and a run without --labels remove an earlier run's
// report.html / metrics.json.
truffld::Status WriteOutputs(const Args& a, const td::PipelineResult& result, const td::InstanceTable& target,
                             const std::optional<td::LabelSet>& labels, const std::optional<nlohmann::json>& metrics,
                             const td::ReportContext& ctx, const td::TraceChoice& trace, nlohmann::json& stats,
                             std::chrono::steady_clock::time_point t0, const std::optional<nlohmann::json>& hang,
                             std::vector<std::string>* warnings, bool* input_side) {
  namespace fs = std::filesystem;
  const fs::path dir(a.outdir);
  truffld::OutputSet out;
  TRUFFLD_RETURN_IF_ERROR(out.AddWith((dir / "diagnosis.jsonl").string(), [&](const std::string& p) {
    return td::WriteDiagnosisJsonl(p, result.diagnoses, a.mode, trace.time_origin_ns);
  }));
  if (metrics) {
    TRUFFLD_RETURN_IF_ERROR(out.Add((dir / "metrics.json").string(), metrics->dump(2) + "\n"));
  } else {
    out.RemoveAtCommit((dir / "metrics.json").string());
  }
  if (ctx.requests && !ctx.requests->empty()) {
    std::string lines;
    for (const td::RequestSummary& r : *ctx.requests) lines += td::RequestJson(r).dump() + "\n";
    TRUFFLD_RETURN_IF_ERROR(out.Add((dir / "requests.jsonl").string(), lines));
  } else {
    out.RemoveAtCommit((dir / "requests.jsonl").string());
  }
  if (hang) {
    TRUFFLD_RETURN_IF_ERROR(out.Add((dir / "hang.json").string(), hang->dump(2) + "\n"));
  } else {
    out.RemoveAtCommit((dir / "hang.json").string());
  }
  if (!a.export_features.empty()) {
    TRUFFLD_RETURN_IF_ERROR(out.AddWith(a.export_features, [&](const std::string& p) {
      // `p` is a temporary name: the format follows the name asked for.
      return td::WriteFeatures(p, td::IsCsvPath(a.export_features), target, result.instance_p,
                               labels ? &*labels : nullptr);
    }));
  }
  if (!a.export_tests.empty() && result.peer) {
    TRUFFLD_RETURN_IF_ERROR(out.AddWith(a.export_tests, [&](const std::string& p) {
      return td::WriteTests(p, target, *result.peer);
    }));
  }
  if (a.step_features && result.peer) {
    TRUFFLD_RETURN_IF_ERROR(out.AddWith((dir / "step_features.jsonl").string(), [&](const std::string& p) {
      const td::StepFeatureOptions fo{a.replica, 8};
      return td::WriteStepFeatures(p, td::BuildStepFeatures(target, *result.peer, result.diagnoses, fo));
    }));
  } else {
    out.RemoveAtCommit((dir / "step_features.jsonl").string());
  }
  if (!a.no_html) {
    td::ReportContext with_run = ctx;
    std::optional<td::ReportRunData> run;
    if (result.peer) {
      run = td::BuildReportRunData(target, *result.peer, result.diagnoses);
      with_run.run = &*run;
    }
    TRUFFLD_RETURN_IF_ERROR(out.Add((dir / "report.html").string(), td::RenderHtmlReport(result.diagnoses, with_run)));
  } else {
    out.RemoveAtCommit((dir / "report.html").string());
  }
  TRUFFLD_RETURN_IF_ERROR(td::AddAnnotatedTrace(trace, result.diagnoses, target, (dir / "diagnosis.trace.json").string(),
                                                &out, &stats, warnings, input_side));
  stats["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  TRUFFLD_RETURN_IF_ERROR(out.Add((dir / "stats.json").string(), stats.dump(2) + "\n"));
  return out.Commit();
}

// The stdout table and summary (nothing with --quiet).
void PrintSummary(const Args& a, const td::PipelineResult& result, const std::string& metrics_text,
                  const td::StageTwoStats& s2, double secs, bool trace_written) {
  if (a.quiet) return;
  const auto& s1 = result.legacy;
  std::fputs(td::FormatAbnormalTable(result.diagnoses).c_str(), stdout);
  if (!metrics_text.empty()) {
    std::printf("\nEvaluation against %s:\n%s", truffld::EscapeForTerminal(a.labels).c_str(),
                truffld::EscapeLinesForTerminal(metrics_text).c_str());
  }
  if (result.peer) {
    std::fputs(td::FormatPeerSummary(*result.peer).c_str(), stdout);
  } else {
    std::printf("\nStage I (%s): %llu mixture fits, %llu robust-z groups, %llu fit failures.", a.mode.c_str(),
                (unsigned long long)s1.gmm_fits, (unsigned long long)s1.robust_z_groups,
                (unsigned long long)s1.fit_failures);
  }
  std::printf("\nStage II: %lld LLM, %lld cache, %lld offline, %lld fallbacks, %lld requests, %lld tokens. %.2f s\n"
              "Wrote %s/{diagnosis.jsonl,%s%sstats.json%s}\n",
              (long long)s2.llm_decisions, (long long)s2.cache_hits,
              (long long)s2.offline_decisions, (long long)s2.fallbacks, (long long)s2.requests,
              (long long)(s2.prompt_tokens + s2.completion_tokens), secs, a.outdir.c_str(),
              a.no_html ? "" : "report.html,", trace_written ? "diagnosis.trace.json," : "",
              !a.labels.empty() ? ",metrics.json" : "");
}

// Checks and applies the Stage I and Stage II options; returns an exit status (0 when valid).
int Configure(Args& a, td::StageTwoConfig* cfg) {
  namespace fs = std::filesystem;
  using truffld::kExitUsage;
  a.s1.mode = ParseMode(a.mode);
  a.s1.auto_covariance = a.covariance == "auto";
  a.s1.gmm.covariance = a.covariance == "full" ? td::CovarianceType::kFull : td::CovarianceType::kDiagonal;
  if (a.rho != "paper" && a.rho != "gated" && a.rho != "calibrated") {
    return Fail(kExitUsage, "--rho must be calibrated, gated or paper (got '" + a.rho + "')");
  }
  a.s1.rho = a.rho == "paper" ? td::RhoRule::kPaper
             : a.rho == "gated" ? td::RhoRule::kGated : td::RhoRule::kCalibrated;
  if (a.s1.mode == td::ScoringMode::kReference && a.reference.empty()) {
    return Fail(kExitUsage, "--mode reference needs --reference DIR (trees of a healthy run)");
  }
  if (a.s1.threads <= 0) a.s1.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  a.peer.threads = a.s1.threads;
  *cfg = td::StageTwoConfig::FromEnvironment();
  auto mode = td::ParseLlmMode(a.llm);
  if (!mode.ok()) return Fail(kExitUsage, mode.status().message());
  cfg->mode = *mode;
  cfg->url = a.llm_url;
  if (!a.llm_model.empty()) cfg->model = a.llm_model;
  cfg->cache_dir = a.llm_cache.empty() ? (fs::path(a.outdir) / "llm-cache").string() : a.llm_cache;
  if (auto st = cfg->Validate(); !st.ok()) return Fail(kExitUsage, st.message());
  return truffld::kExitOk;
}

// The instance table holds two small allocations per instance (kernel and API tallies); the
// process ends right after Run and hands its memory back whole, so the table is left for it
// rather than freed piece by piece (2 % of a run's CPU). Kept reachable: no leak to a checker.
void LeaveForExit(td::InstanceTable t) {
  static const td::InstanceTable* const kept = new td::InstanceTable(std::move(t));
  (void)kept;
}

int Run(Args& a) {
  using truffld::kExitInput, truffld::kExitOutput, truffld::kExitUsage;
  auto t0 = std::chrono::steady_clock::now();
  td::StageTwoConfig cfg;
  if (int rc = Configure(a, &cfg); rc != truffld::kExitOk) return rc;

  truffld::Progress progress(a.quiet);
  nlohmann::json stats;
  const std::optional<td::HangRun> hang = StoppedDumps(a);
  auto target = Load(a.input, "input", &stats, a.quiet, a, &progress);
  if (!target.ok() && hang) std::fprintf(stderr, "truffld-diagnose: run with --hang for the hang report alone\n");
  if (!target.ok()) return Fail(kExitInput, target.status().ToString());
  std::optional<td::InstanceTable> reference;
  if (!a.reference.empty()) {
    auto ref = Load(a.reference, "reference", &stats, a.quiet, a, &progress);
    if (!ref.ok()) return Fail(kExitInput, ref.status().ToString());
    reference = std::move(ref).value();
  }
  auto trace = td::ChooseTrace(a.input, a.trace, a.no_trace);
  if (!trace.ok()) return Fail(kExitInput, trace.status().ToString());
  if (!trace->why_none.empty() && !a.quiet) std::fprintf(stderr, "note: %s\n", truffld::EscapeForTerminal(trace->why_none).c_str());
  std::optional<td::LabelSet> labels;
  if (!a.labels.empty()) {
    auto l = td::ReadLabels(a.labels);
    if (!l.ok()) return Fail(kExitInput, l.status().ToString());
    labels = std::move(l).value();
    for (const auto& p : labels->problems) std::fprintf(stderr, "labels: %s\n", truffld::EscapeForTerminal(p).c_str());
  }
  auto lock = td::ClaimOutdir(a);  // held until exit
  if (!lock.ok()) return Fail(kExitOutput, lock.status().message());

  td::StageTwo stage2(cfg);
  auto result = [&] {
    truffld::ProgressTimer timer(progress, cfg.UsesLlm() ? "scoring (Stage I) and asking the LLM (Stage II)..."
                                                         : "scoring (Stage I and II)...");
    return td::RunPipeline(*target, reference ? &*reference : nullptr, a.s1, a.peer, stage2);
  }();
  if (!result.ok()) return Fail(kExitInput, result.status().ToString());
  if (const auto s2 = stage2.stats(); s2.breaker_tripped) {
    std::fprintf(stderr, "truffld-diagnose: warning: LLM endpoint given up (%s); the offline policy decided "
                 "the remaining %lld step(s)\n", truffld::EscapeForTerminal(s2.breaker_reason).c_str(),
                 (long long)s2.breaker_steps);
  }
  const auto& s1 = result->legacy;
  stats["stage1"] = td::StageOneStatsJson(a.mode, s1);
  if (result->peer) stats["peer"] = td::PeerStatsJson(*target, *result->peer);
  stats["stage2"] = td::StageTwoStatsJson(stage2.stats(), cfg.Describe());

  std::string metrics_text;
  std::optional<nlohmann::json> metrics;
  if (labels) {
    auto ev = td::Evaluate(td::ToPredictions(result->diagnoses), *labels);
    metrics_text = td::FormatEvaluation(ev);
    metrics = td::EvaluationToJson(ev);
    (*metrics)["mode"] = a.mode;
    (*metrics)["labels"] = {{"path", a.labels}, {"lines", labels->lines}, {"bad_lines", labels->bad_lines}};
  }
  td::ReportContext ctx = MakeReportContext(a, cfg.Describe(), metrics_text, s1.notes, stats, *trace);
  const std::optional<nlohmann::json> hang_json = AddHang(hang, &ctx);
  const std::vector<td::RequestSummary> requests = td::SummariseRequests(result->diagnoses);
  ctx.requests = &requests;
  const std::optional<truffld::RunStats> run_stats = td::ReadMergeRunStats(a.input, &ctx.notes);
  if (run_stats) ctx.run_stats = &*run_stats;
  std::vector<std::string> warnings;
  bool input_side = false;
  truffld::Status written = [&] {
    truffld::ProgressTimer timer(progress, "writing outputs...");
    return WriteOutputs(a, *result, *target, labels, metrics, ctx, *trace, stats, t0, hang_json, &warnings, &input_side);
  }();
  for (const std::string& w : warnings)
    std::fprintf(stderr, "truffld-diagnose: warning: %s\n", truffld::EscapeForTerminal(w).c_str());
  if (!written.ok()) return Fail(input_side ? kExitInput : kExitOutput, written.ToString());
  PrintSummary(a, *result, metrics_text, stage2.stats(), stats["seconds"].get<double>(),
               !trace->path.empty() && !stats["trace"].contains("error"));
  if (!a.quiet && !requests.empty()) std::fputs(td::FormatRequestLine(requests).c_str(), stdout);
  LeaveForExit(std::move(*target));
  return truffld::kExitOk;
}

// --compare BASELINE: both runs read, compared at equal workload, compare.json written.
int RunCompare(const Args& a) {
  using truffld::kExitInput, truffld::kExitOutput;
  truffld::Progress progress(a.quiet);
  nlohmann::json stats;
  auto target = Load(a.input, "input", &stats, a.quiet, a, &progress);
  if (!target.ok()) return Fail(kExitInput, target.status().ToString());
  auto base = Load(a.compare, "baseline", &stats, a.quiet, a, &progress);
  if (!base.ok()) return Fail(kExitInput, base.status().ToString());
  td::CompareOptions o;
  o.min_change = a.compare_min_change;
  const td::CompareResult r = td::CompareRuns(*target, *base, o);
  auto lock = td::ClaimOutdir(a);
  if (!lock.ok()) return Fail(kExitOutput, lock.status().message());
  std::vector<std::pair<std::string, std::string>> files = {{"compare.json", td::CompareJson(r, a.input, a.compare, o).dump(2) + "\n"}};
  if (!a.no_html) files.push_back({"compare.html", td::RenderCompareHtml(r, a.input, a.compare, o)});
  if (const truffld::Status st = td::CommitAlone(a, files); !st.ok()) return Fail(kExitOutput, st.message());
  if (!a.quiet) std::fputs(truffld::EscapeLinesForTerminal(td::FormatCompare(r)).c_str(), stdout);
  return truffld::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  a.s1.threads = 0;  // all cores unless --threads says otherwise
  CLI::App app{"truffld-diagnose: label abnormal steps and faulty operators in merged LLM-inference traces.\n"
               "Stage I compares every operator with peers that did the same work; Stage II confirms with an LLM\n"
               "(OpenAI-compatible endpoint) or, offline, with the same decision policy as code."};
  app.footer(std::string(td::kFooter) + truffld::kOutputLockHelp + truffld::kExitStatusHelp);
  truffld::AddVersionFlag(app, "truffld-diagnose");
  td::AddOptions(app, &a);
  if (auto rc = truffld::ParseCommandLine(app, argc, argv)) return *rc;
  if (!a.reference.empty() && app.count("--mode") == 0) a.mode = "reference";
  if (std::string err = td::CheckFlagsApplyToMode(app, a); !err.empty()) return Fail(truffld::kExitUsage, err);
  if (a.hang_only) return td::RunHangOnly(a);
  if (!a.compare.empty()) return RunCompare(a);
  return Run(a);
}
