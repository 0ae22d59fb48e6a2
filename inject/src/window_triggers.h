// What asks for a device window besides the periodic plan (device_windows.h): slow steps, slow
// collectives and the operator's control file.
//
// SlowSteps keeps, per step phase (the `[phase:X]` tag inside a step's NVTX name, e.g.
// `step_execute_model[request_ids:a_b][phase:decode][tokens:12]`; a name without the tag is
// one class of its own), the durations of the last kSlowHistory completed steps, and says
// whether a step was far slower than the median of those before it. The same class, keyed by a
// collective range's exact name (truffld's hooks write op, bytes and world size into it), judges
// collectives. ControlFileWatch turns the
// successive stat() results of the control file (TRUFFLD_WINDOW_CONTROL) into "a window was
// asked for": the file appeared, or its modification time (or inode) changed. The first
// observation only sets the baseline, so a file left over from an earlier run asks for nothing.
// Pure logic. Units: ns. Thread-safety: none (DeviceWindows' caller serialises the calls).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace truffld::inject {

inline constexpr size_t kSlowHistory = 32;    // steps per phase the median is taken over
inline constexpr size_t kSlowMinHistory = 8;  // fewer known steps never make a step "slow"
inline constexpr size_t kMaxStepPhases = 16;  // distinct phases kept; later ones share the last

// The X of the first `[phase:X]` tag in a step name ("" when there is none).
std::string_view StepPhase(std::string_view step_name);

// Per-phase history of step durations and the slow-step judgement.
class SlowSteps {
 public:
  // factor: a step is slow when it lasts more than factor x the median (0: never; the durations
  // are kept all the same, for Median).
  explicit SlowSteps(double factor) : factor_(factor) {}

  // The class of a phase text (interned; past kMaxStepPhases phases, the last class is shared).
  uint32_t PhaseId(std::string_view phase);
  // The class of a text that must never share one (a collective's name, which holds its size):
  // interned, or kNoClass past kMaxStepPhases texts.
  static constexpr uint32_t kNoClass = UINT32_MAX;
  uint32_t ExactId(std::string_view text);
  // Records a completed step of class `phase`. Returns true when it is slow: at least
  // kSlowMinHistory earlier steps of its class are known and it lasted more than factor x
  // their median (over the last kSlowHistory of them).
  bool Add(uint32_t phase, int64_t duration_ns);
  // Median of the known durations of a class (the upper one of an even count); -1 when none.
  int64_t Median(uint32_t phase) const;
  size_t Known(uint32_t phase) const { return phase < phases_.size() ? phases_[phase].n : 0; }
  void Reset() { phases_.clear(); }

 private:
  struct History {
    std::string name;
    int64_t d[kSlowHistory] = {};
    size_t n = 0, next = 0;  // durations held (<= kSlowHistory), slot of the next one
  };
  double factor_;
  std::vector<History> phases_;
};

// One stat() of the control file: whether it exists, and its identity and modification time.
struct FileStamp {
  bool exists = false;
  int64_t mtime_ns = 0;
  uint64_t dev = 0, ino = 0;
};

// Change detection on the control file (see the file comment).
class ControlFileWatch {
 public:
  // True when `now` shows the file appeared or changed since the previous call; the first call
  // only records the baseline.
  bool Changed(const FileStamp& now);

 private:
  bool seen_ = false;
  FileStamp last_;
};

}  // namespace truffld::inject
