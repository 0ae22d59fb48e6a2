// compare.html: the comparison of two runs (compare/compare.h) as one self-contained page, no
// script: the finding, step time per view and phase, family changes (significant first), and
// kernels that appeared or disappeared. Thread-safety: pure function.
#pragma once

#include <string>

#include "compare/compare.h"

namespace truffld::diagnose {

std::string RenderCompareHtml(const CompareResult& r, const std::string& target, const std::string& baseline,
                              const CompareOptions& o);

}  // namespace truffld::diagnose
