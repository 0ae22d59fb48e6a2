// Window triggers: see window_triggers.h.
#include "window_triggers.h"

#include <algorithm>

namespace truffld::inject {

std::string_view StepPhase(std::string_view step_name) {
  constexpr std::string_view kTag = "[phase:";
  const size_t at = step_name.find(kTag);
  if (at == std::string_view::npos) return {};
  const std::string_view rest = step_name.substr(at + kTag.size());
  return rest.substr(0, rest.find(']'));
}

uint32_t SlowSteps::PhaseId(std::string_view phase) {
  for (size_t i = 0; i < phases_.size(); ++i)
    if (phases_[i].name == phase) return static_cast<uint32_t>(i);
  if (phases_.size() >= kMaxStepPhases) return static_cast<uint32_t>(kMaxStepPhases - 1);
  phases_.emplace_back();
  phases_.back().name.assign(phase);
  return static_cast<uint32_t>(phases_.size() - 1);
}

uint32_t SlowSteps::ExactId(std::string_view text) {
  for (size_t i = 0; i < phases_.size(); ++i)
    if (phases_[i].name == text) return static_cast<uint32_t>(i);
  if (phases_.size() >= kMaxStepPhases) return kNoClass;
  phases_.emplace_back();
  phases_.back().name.assign(text);
  return static_cast<uint32_t>(phases_.size() - 1);
}

int64_t SlowSteps::Median(uint32_t phase) const {
  if (phase >= phases_.size() || phases_[phase].n == 0) return -1;
  const History& h = phases_[phase];
  int64_t copy[kSlowHistory];
  std::copy(h.d, h.d + h.n, copy);
  std::nth_element(copy, copy + h.n / 2, copy + h.n);
  return copy[h.n / 2];
}

bool SlowSteps::Add(uint32_t phase, int64_t duration_ns) {
  if (duration_ns < 0) return false;
  if (phase >= phases_.size()) phase = PhaseId({});  // an unknown class: the untagged one
  const bool slow = factor_ > 0 && phases_[phase].n >= kSlowMinHistory &&
                    static_cast<double>(duration_ns) > factor_ * static_cast<double>(Median(phase));
  History& h = phases_[phase];
  h.d[h.next] = duration_ns;
  h.next = (h.next + 1) % kSlowHistory;
  if (h.n < kSlowHistory) ++h.n;
  return slow;
}

bool ControlFileWatch::Changed(const FileStamp& now) {
  const bool first = !seen_;
  const FileStamp before = last_;
  seen_ = true;
  last_ = now;
  if (first || !now.exists) return false;
  return !before.exists || before.mtime_ns != now.mtime_ns || before.ino != now.ino ||
         before.dev != now.dev;
}

}  // namespace truffld::inject
