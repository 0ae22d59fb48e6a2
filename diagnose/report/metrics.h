// Evaluation against ground truth (labels.jsonl from the workload generator).
//
// Label lines: {"rank":0,"step_index":12,"view":"vertical","abnormal":true,"faulty":["aten::mm"],
// "fault_ids":["f3"]}; steps absent from the labels are normal with no faulty operator.
// Metrics follow the design's appendix, per view. Step level: Accuracy = (TP+TN)/N,
// Precision = TP/(TP+FP), Recall = TP/(TP+FN), F1 = 2TP/(2TP+FP+FN) (0 when undefined).
// Operator level, per family t over steps: P_t = TP_t/(TP_t+FP_t+eps), R_t = TP_t/(TP_t+FN_t+eps),
// F1_t = 2 P_t R_t/(P_t+R_t+eps), J_t = TP_t/(TP_t+FP_t+FN_t+eps); Macro = mean over every
// family seen in predictions or labels of that view; Macro+ = mean over families with at least
// one true fault. The set of steps is the union of predicted and labelled steps.
// Thread-safety: pure functions; ReadLabels is a thin file adapter.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "read/instances.h"
#include "truffld/status.h"

namespace truffld::diagnose {

struct StepLabel {
  bool abnormal = false;
  std::vector<std::string> faulty;  // operator families
};

struct LabelSet {
  std::map<StepKey, StepLabel> steps;
  uint64_t lines = 0, bad_lines = 0;
  std::vector<std::string> problems;  // first 20 "file:line: problem"
};

// Parses one labels.jsonl line into `out` (bad lines are counted and described, not fatal).
void ParseLabelLine(std::string_view line, const std::string& where, LabelSet* out);
// Reads a labels.jsonl[.gz|.zst] file. Fails only when the file cannot be read.
Result<LabelSet> ReadLabels(const std::string& path);

struct Prediction {
  StepKey key;
  bool abnormal = false;
  std::vector<std::string> faulty;
};

struct StepMetrics {
  long tp = 0, fp = 0, tn = 0, fn = 0;
  double accuracy = 0, precision = 0, recall = 0, f1 = 0;
};

struct FamilyMetrics {
  std::string family;
  long tp = 0, fp = 0, fn = 0;
  double precision = 0, recall = 0, f1 = 0, jaccard = 0;
  bool positive = false;  // at least one true fault
};

struct MacroMetrics {
  double precision = 0, recall = 0, f1 = 0, jaccard = 0;
  int families = 0;
};

struct ViewEvaluation {
  std::string view;
  long steps = 0, labelled_steps_missing = 0;  // labelled steps the output does not have
  StepMetrics step;
  std::vector<FamilyMetrics> families;
  MacroMetrics macro, macro_plus;
};

StepMetrics ComputeStepMetrics(long tp, long fp, long tn, long fn);
FamilyMetrics ComputeFamilyMetrics(std::string family, long tp, long fp, long fn, double eps);

// One ViewEvaluation per view present in predictions or labels ("horizontal", "vertical").
std::vector<ViewEvaluation> Evaluate(const std::vector<Prediction>& predictions,
                                     const LabelSet& labels, double eps = 1e-9);

nlohmann::json EvaluationToJson(const std::vector<ViewEvaluation>& e);
// Human-readable summary table.
std::string FormatEvaluation(const std::vector<ViewEvaluation>& e);

}  // namespace truffld::diagnose
