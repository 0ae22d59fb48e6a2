// truffld-diagnose's command line: the parsed arguments, the flags grouped as --help shows them
// (general, peer detector, Stage II, outputs, legacy mixture modes), and which flags apply to
// which --mode.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "legacy/stage1.h"
#include "peer/stage.h"

namespace truffld::diagnose {

struct Args {
  std::string input, outdir, mode = "peer", reference, covariance = "auto", rho = "calibrated";
  std::string llm = "auto", llm_url, llm_model, llm_cache, labels, export_features;
  StageOneOptions s1;
  PeerStageOptions peer;
  std::string export_tests;
  bool step_features = false;  // write OUTDIR/step_features.jsonl (peer mode)
  std::string replica;        // replica label on its lines
  std::string trace;  // merge's trace.json to annotate ("" = beside the trees)
  bool quiet = false, no_html = false, graph_vertical_ops = true, no_trace = false, wait_lock = false;
  std::string compare;             // --compare BASELINE: compare the input with this run
  double compare_min_change = 0.05;
  bool hang_only = false;         // --hang: localise a hang from summary.json, nothing else
  bool outside_operators = true;  // judge the time no operator range covers (TreeReader::set_outside_time)
  size_t report_cards = 500;
};

// The --help headings of the mode-specific flags.
inline constexpr const char* kPeerGroup = "Peer detector (--mode peer, the default)";
inline constexpr const char* kLegacyGroup = "Legacy mixture modes (--mode pooled|reference|within-step)";

// Adds every flag of truffld-diagnose to `app`, writing into `*a`.
void AddOptions(CLI::App& app, Args* a);

// After parsing: "" when every flag given on the command line applies to a.mode, else the
// usage error naming the first flag that does not and the mode.
std::string CheckFlagsApplyToMode(const CLI::App& app, const Args& a);

}  // namespace truffld::diagnose
