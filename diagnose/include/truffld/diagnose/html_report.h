// Self-contained HTML report: everything inline (CSS and SVG), no scripts, no network.
//
// Three views: a step timeline per (rank, view) coloured by the fused label, per-family score
// distributions over steps (A = 1 - rho-bar; Stage I candidates and faulty operators marked),
// and the call chain of each faulty operator in each abnormal step. Operator names are
// untrusted text and are always HTML-escaped.
// Thread-safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "truffld/diagnose/fusion.h"

namespace truffld::diagnose {

struct ReportContext {
  std::string title = "truffld diagnosis";
  std::string input;        // trees path, for the header
  std::string mode;         // Stage I scoring mode
  std::string stage2;       // one line describing Stage II
  std::string metrics_text; // optional evaluation summary
  std::vector<std::string> notes;  // read problems, fallbacks
};

std::string HtmlEscape(const std::string& s);
std::string RenderHtmlReport(const std::vector<StepDiagnosis>& d, const ReportContext& ctx);

}  // namespace truffld::diagnose
