// truffld-diagnose --help: what it reads and writes, the modes, examples (the part after the
// flag list). Kept apart from main.cc so the CLI code stays short.
#pragma once

namespace truffld::diagnose {

inline constexpr const char* kFooter = R"(
Outputs (in OUTDIR):
  diagnosis.jsonl  one line per (rank, step, view): label, faulty operators with scores and
                   parent chain, Stage I candidates, Stage II decision and its source
                   (schema: schemas/diagnosis.schema.json)
  report.html      self-contained report (opens offline): heat map of abnormal units per rank
                   and step, per-rank/per-family/straggler tables, abnormal units ranked by
                   what they cost their steps (the step time saved without the anomaly) with
                   their operators' observed vs expected us, call chains and cost histograms;
                   anchors #r<rank>-s<step>-<v|h> for linking
  requests.jsonl   one line per request: its steps, TTFT and TPOT where the steps show them,
                   the abnormal units it went through and what they cost it
  stats.json       input problems, per-view thresholds and residual models, stragglers,
                   run findings (patterns in most steps, persistent stragglers, a pipeline
                   stage longer than the others, slower regimes of the time outside
                   operators), Stage II requests/tokens/cache
  metrics.json     with --labels: step Accuracy/Precision/F1, operator Macro and Macro+ per view
  step_features.jsonl  with --step-features (peer mode): one compact line per (rank, step):
                   replica/host/rank, phase, batch, tokens, context, step time, time since the
                   previous step, the 8 costliest families' cost and expected cost, collective
                   waits, verdict (schema: schemas/step_features.schema.json); truffld-fleet
                   compares them across replicas
  diagnosis.trace.json  truffld-merge's trace.json (found beside the trees, or --trace) with a
                   "truffld diagnosis" process: abnormal units, faulty-operator markers with flow
                   arrows to their operator slices, verdicts in the step slices' args; open it in
                   ui.perfetto.dev or chrome://tracing (--no-trace: not written)
  compare.json     with --compare, instead of the above: the cost changes against the baseline
  hang.json        with --hang, or beside the diagnosis when the dumps stopped without a clean
                   exit: the rank the others waited for and where it was

Modes (Stage I):
  peer         (default) every operator instance is compared with peers that did the same work:
               its other layers in the step, the other tensor-parallel ranks in the same step,
               and the nearest steps of similar workload on its rank; a unit is abnormal when its
               p-value is below a threshold that flags at most --false-alarm-rate of healthy
               units; a unit without such peers is labelled insufficient_evidence
  pooled       one mixture per (view, family) over all steps (the earlier detector)
  reference    one mixture per (view, family) fitted on a healthy run given by --reference
  within-step  one mixture per (step, view, family), as in the design paper
  The flags under "Peer detector" apply to peer mode only, those under "Legacy mixture modes" to
  the other three only (--reference to reference mode, --trim to pooled mode); a flag given with a
  mode it does not apply to is a usage error (exit 2).

Examples:
  truffld-diagnose merged/ -o diag/                                # offline, peer mode
  truffld-diagnose merged/ -o diag/ --false-alarm-rate 0.001       # fewer, surer alarms
  truffld-diagnose merged/ -o diag/ --labels synth/labels.jsonl --export-tests tests.csv
  TRUFFLD_LLM_API_KEY=... truffld-diagnose merged/ -o diag/ --llm auto \
      --llm-url http://127.0.0.1:8000/v1 --llm-model qwen2.5-7b-instruct

The API key is read only from TRUFFLD_LLM_API_KEY or OPENAI_API_KEY and is never printed;
credentials in --llm-url (user:password@, ?key=...) are redacted wherever the URL is shown.
Outputs are written under temporary names and renamed into place when all are complete; an
earlier run's report.html (with --no-html) and metrics.json (without --labels) are removed.
)";

}  // namespace truffld::diagnose
