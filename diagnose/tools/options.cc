// truffld-diagnose's flags, grouped under --help headings, and which --mode each applies to.
#include "options.h"

#include <algorithm>
#include <vector>

#include "stage2/llm_stage2.h"
#include "truffld/cli_parse.h"

namespace truffld::diagnose {
namespace {

// Flags of every mode: input, output directory, mode, threads, verbosity.
void AddGeneralOptions(CLI::App& app, Args* a) {
  app.add_option("input", a->input, "trees.jsonl[.gz|.zst] or a truffld-merge output directory")->required();
  app.add_option("-o,--out", a->outdir, "output directory (created if missing)")->required();
  app.add_option("--mode", a->mode, "Stage I scoring: peer | pooled | reference | within-step")
      ->check(CLI::IsMember({"peer", "pooled", "reference", "within-step"}))->capture_default_str();
  app.add_flag("--graph-vertical-ops,!--no-graph-vertical-ops", a->graph_vertical_ops,
               "rebuild non-comm operators from CUDA-graph replays (captured_in) into the vertical "
               "view, modelled apart from traced ranges (default on; comm captures always go to "
               "the horizontal view)");
  app.add_flag("--outside-operators,!--no-outside-operators", a->outside_operators,
               "judge the time no operator range covers like an operator (default on): per step, "
               "'(host outside operators)' (host time between operators), '(between steps)' (from "
               "the previous step's end, when the steps share a request or name none), '(calls "
               "under the step)' (CUDA calls with no operator around them, e.g. an input copy) and "
               "'(device idle)' (time inside the step the device ran no kernel, copy or memset); a "
               "step without operator detail is judged as '(whole step)'");
  app.add_option("--threads", a->s1.threads, "Stage I worker threads (0 = all cores)")->capture_default_str();
  app.add_flag("--wait-lock", a->wait_lock,
               "when another run is writing OUTDIR (it holds OUTDIR/.truffld.lock), wait for it "
               "instead of exiting 3 at once");
  app.add_flag("-q,--quiet", a->quiet, "print nothing on success: no stdout table, no progress (warnings and errors still go to stderr)");
}

void AddPeerOptions(CLI::App& app, Args* a) {
  app.option_defaults()->group(kPeerGroup);
  app.add_option("--false-alarm-rate", a->peer.decision.alpha,
                 "peer mode: Benjamini-Hochberg level for step verdicts (expected share of "
                 "healthy steps flagged stays below it)")
      ->check(truffld::FiniteRange(1e-9, 0.5))->capture_default_str();
  app.add_option("--single-ratio-device", a->peer.decision.single_ratio_device,
                 "peer mode: a lone slow instance (no second instance or family sum agreeing) "
                 "must take at least this many times its expected device time to count")
      ->check(truffld::FiniteRange(1.0, 100.0))->capture_default_str();
  app.add_option("--single-ratio-host", a->peer.decision.single_ratio_host,
                 "peer mode: the same for host time")
      ->check(truffld::FiniteRange(1.0, 100.0))->capture_default_str();
  app.add_option("--single-ratio-transfer", a->peer.decision.single_ratio_transfer,
                 "peer mode: the same for a collective's transfer (seen by every participant)")
      ->check(truffld::FiniteRange(1.0, 100.0))->capture_default_str();
  app.add_option("--lone-min-share", a->peer.decision.lone_min_share,
                 "peer mode: a lone slow instance must also cost at least this share of its step")
      ->check(truffld::FiniteRange(0.0, 1.0))->capture_default_str();
  app.add_option("--min-impact-share", a->peer.decision.min_impact_share,
                 "peer mode: an abnormal unit's blamed operators must have cost its step at least this share of "
                 "its time (0.01 = 1%; the step time saved without them, by what-if replay); a significant unit "
                 "below it is labelled normal and its evidence says why")
      ->check(truffld::FiniteRange(0.0, 1.0))->capture_default_str();
  app.add_option("--long-step-ratio", a->peer.decision.long_step_ratio,
                 "peer mode: a step that took at least this many times the median of its similar steps (its "
                 "duration and the time between steps before it) is judged against the assumed null, never "
                 "against the run's own spread, so a run of noisy steps cannot hide it (0 turns this off)")
      ->check(truffld::FiniteRange(0.0, 100.0))->capture_default_str();
  app.add_option("--export-tests", a->export_tests, "peer mode: write every tested cost with its peer expectations (CSV)");
  app.add_flag("--step-features", a->step_features,
               "peer mode: write OUTDIR/step_features.jsonl, one compact line per (rank, step): workload, step "
               "time, time between steps, the costliest families' cost and expected cost, collective waits, "
               "verdict (what truffld-fleet compares across replicas)");
  app.add_option("--replica", a->replica, "peer mode: replica label written on every step_features.jsonl line");
}

void AddStageTwoOptions(CLI::App& app, Args* a) {
  app.option_defaults()->group("Stage II (LLM)");
  app.add_option("--llm", a->llm, "Stage II: off | auto (LLM when --llm-url is set) | on (LLM required)")
      ->check(CLI::IsMember({"off", "auto", "on"}))->capture_default_str();
  app.add_option("--llm-url", a->llm_url, "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1");
  app.add_option("--llm-model", a->llm_model, "model name sent to the endpoint (default " + StageTwoConfig{}.model + ")");
  app.add_option("--llm-cache", a->llm_cache, "answer cache directory (default OUTDIR/llm-cache)");
}

void AddOutputOptions(CLI::App& app, Args* a) {
  app.option_defaults()->group("Outputs");
  app.add_option("--labels", a->labels, "ground truth labels.jsonl: print and write metrics.json");
  app.add_option("--export-features", a->export_features, "write phi per instance (CSV if *.csv, else JSONL)");
  app.add_option("--report-cards", a->report_cards,
                 "report.html: abnormal units shown as cards (those that cost their steps most, every rank "
                 "keeps a share; the rest are listed in its index)")->check(CLI::Range(0, 100000))->capture_default_str();
  app.add_option("--trace", a->trace, "truffld-merge's trace.json to annotate (default: trace.json beside the trees)");
  app.add_flag("--no-trace", a->no_trace, "skip diagnosis.trace.json (an earlier run's in OUTDIR is removed)");
  app.add_option("--compare", a->compare,
                 "compare the input with BASELINE (trees or a merge directory of an earlier run): per operator family, "
                 "view and phase, the cost change at equal workload with a 95% interval, the step time's change and "
                 "the families behind it, kernels that appeared or disappeared; writes OUTDIR/compare.json and prints "
                 "the table (no diagnosis)");
  app.add_option("--compare-min-change", a->compare_min_change,
                 "with --compare: smallest change called significant (0.05 = 5%; the interval must also exclude no change)")
      ->check(CLI::Range(0.0, 10.0))->capture_default_str();
  app.add_flag("--hang", a->hang_only,
               "only localise a hang: read truffld-merge's summary.json (the input directory's, or the one beside "
               "the trees), name the rank the others waited for and where it was, write OUTDIR/hang.json and print "
               "the finding; needs no usable trees (a run whose dumps stopped without a clean exit does this "
               "beside the diagnosis without the flag)");
  app.add_flag("--no-html", a->no_html, "skip report.html (an earlier run's report.html in OUTDIR is removed)");
}

void AddLegacyOptions(CLI::App& app, Args* a) {
  app.option_defaults()->group(kLegacyGroup);
  app.add_option("--reference", a->reference, "trees of a healthy run (file or merge directory); implies --mode reference unless --mode is given");
  app.add_option("--k-min", a->s1.k_min, "smallest mixture size tried by BIC")->capture_default_str();
  app.add_option("--k-max", a->s1.k_max, "largest mixture size tried by BIC")->capture_default_str();
  app.add_option("--covariance", a->covariance, "covariance: auto (full with >= 10 samples per entry, else diag) | full | diag")
      ->check(CLI::IsMember({"auto", "diag", "full"}))->capture_default_str();
  app.add_option("--reg-covar", a->s1.gmm.reg_covar, "variance floor added to covariances (standardised units)")->check(truffld::Finite())->capture_default_str();
  app.add_option("--central-mass", a->s1.central_mass, "central components: heaviest ones reaching this weight")->check(truffld::Finite())->capture_default_str();
  app.add_flag("--top1", a->s1.top1, "central set = the single heaviest component");
  app.add_flag("--split-ranks", a->s1.split_rank,
               "model each family separately per rank (default: all ranks pooled)");
  app.add_flag("--split-regimes,!--no-split-regimes", a->s1.split_regime,
               "model CUDA-graph replay (decode) steps and eager steps separately in the vertical "
               "view too (default on; horizontal: always split)");
  app.add_option("--rho", a->rho, "instance confidence: calibrated = central responsibilities x chi-square tail (reaches 1e-6 for far-out points); "
                 "gated = the same tail divided by --tail-alpha and capped at 1; paper = plain responsibilities")
      ->check(CLI::IsMember({"calibrated", "gated", "paper"}))->capture_default_str();
  app.add_option("--tail-alpha", a->s1.tail_alpha, "gate: tail probability below which rho shrinks")->check(truffld::Finite())->capture_default_str();
  app.add_option("--q", a->s1.q, "rho-bar = mean of the lowest floor(q*m) instance confidences")->check(truffld::Finite())->capture_default_str();
  app.add_option("--lambda", a->s1.lambda, "threshold = median + lambda * MAD of the step's scores")->check(truffld::Finite())->capture_default_str();
  app.add_option("--top-m", a->s1.top_m, "legacy modes: at most this many candidates per step (the peer detector blames every operator that explains a unit)")->capture_default_str();
  app.add_option("--min-score", a->s1.min_score, "scores below this are never candidates")->check(truffld::Finite())->capture_default_str();
  app.add_option("--min-instances", a->s1.min_instances, "fewer fitting samples: robust z-scores instead of a mixture")->capture_default_str();
  app.add_option("--trim", a->s1.trim, "pooled mode: fraction of least likely samples dropped before refitting")->check(truffld::Finite())->capture_default_str();
}

// The modes a flag applies to; empty: every mode.
std::vector<std::string> ModesOf(const CLI::Option& o) {
  if (o.get_name() == "--reference") return {"reference"};
  if (o.get_name() == "--trim") return {"pooled"};
  if (o.get_group() == kPeerGroup) return {"peer"};
  if (o.get_group() == kLegacyGroup) return {"pooled", "reference", "within-step"};
  return {};
}

}  // namespace

void AddOptions(CLI::App& app, Args* a) {
  AddGeneralOptions(app, a);
  AddPeerOptions(app, a);
  AddStageTwoOptions(app, a);
  AddOutputOptions(app, a);
  AddLegacyOptions(app, a);  // last: its heading ends the flag list
  app.option_defaults()->group("Options");
}

std::string CheckFlagsApplyToMode(const CLI::App& app, const Args& a) {
  for (const CLI::Option* o : app.get_options()) {
    const std::vector<std::string> modes = ModesOf(*o);
    if (o->count() == 0 || modes.empty() || std::find(modes.begin(), modes.end(), a.mode) != modes.end()) continue;
    std::string list;
    for (const std::string& m : modes) list += (list.empty() ? "" : "|") + m;
    return o->get_name() + " does not apply to --mode " + a.mode + " (only to --mode " + list + ")";
  }
  return "";
}

}  // namespace truffld::diagnose
