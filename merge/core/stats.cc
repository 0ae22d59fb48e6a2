// The stats table's lookups (truffld/merge/stats.h).
#include "truffld/merge/stats.h"

#include <iterator>

namespace truffld::merge {

const char* SeverityName(Severity s) noexcept {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kNotice: return "notice";
    case Severity::kProblem: return "problem";
  }
  return "?";
}

namespace {

constexpr ProblemInfo kProblems[] = {
#define TRUFFLD_PROBLEM_ROW(id, key, severity, counts_as, description) \
  {key, Severity::severity, CountsAs::counts_as, description},
    TRUFFLD_INGEST_PROBLEMS(TRUFFLD_PROBLEM_ROW)
#undef TRUFFLD_PROBLEM_ROW
};

struct ReasonInfo {
  const char* name;
  Severity severity;
};
constexpr ReasonInfo kReasons[] = {
#define TRUFFLD_REASON_ROW(id, name, severity) {name, Severity::severity},
    TRUFFLD_UNATTRIBUTED_REASONS(TRUFFLD_REASON_ROW)
#undef TRUFFLD_REASON_ROW
};

}  // namespace

const ProblemInfo& InfoOf(Problem p) noexcept {
  const size_t i = size_t(p);
  return i < std::size(kProblems) ? kProblems[i] : kProblems[0];
}

const char* UnattributedName(Unattributed u) noexcept {
  return size_t(u) < std::size(kReasons) ? kReasons[size_t(u)].name : "?";
}

Severity SeverityOf(Unattributed u) noexcept {
  return size_t(u) < std::size(kReasons) ? kReasons[size_t(u)].severity : Severity::kProblem;
}

}  // namespace truffld::merge
