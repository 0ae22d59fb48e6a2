// ApiStack: the CUDA API calls open on one thread, from CUPTI's enter and exit callbacks.
//
// Each enter pushes the call's correlation id (the innermost last; a driver call made inside a
// runtime call nests in it) and each exit pops it, so that a record made inside a call (a graph
// node created during capture) names the outermost, user-visible call. The callbacks of the
// detail tier (api_filter.h) are switched at device-window edges while other threads may be
// inside such a call, so a pair can lose a half:
//   - an enter whose exit never comes (the callback went off during the call): the entry is
//     stale once the detail tier is off, and the next enter drops it;
//   - an exit whose enter never came (the callback came on during the call, or the tracer
//     started inside it): nothing on the stack has its id, so Exit says "unpaired" and the
//     call is not recorded (its start is unknown); the caller counts it.
// Plain data, zero-initialised (a thread_local member of ThreadState), no destructor. Pure
// logic, unit-tested. Thread-safety: one instance per thread.
#pragma once

#include <cstdint>

namespace truffld::inject {

struct ApiStack {
  static constexpr uint32_t kSlots = 8;  // deeper calls are counted, not remembered
  uint32_t depth;
  uint64_t ids[kSlots];  // correlation ids of the open calls, outermost first
  uint8_t detail;        // bit k: ids[k]'s callback is in the detail tier

  // Enter of call `id`. `detail`: its callback is in the detail tier; `detail_on`: that tier's
  // callbacks are on now.
  void Enter(uint64_t id, bool is_detail, bool detail_on) {
    if (!detail_on) DropStale();
    if (depth < kSlots) {
      ids[depth] = id;
      const uint8_t bit = static_cast<uint8_t>(1u << depth);
      detail = static_cast<uint8_t>(is_detail ? detail | bit : detail & ~bit);
    }
    ++depth;
  }

  // Exit of call `id`: pops it (and any stale entry above it) and returns true; false when no
  // open call has that id (its enter was not seen), leaving the stack as it was.
  bool Exit(uint64_t id) {
    if (depth == 0) return false;
    if (depth > kSlots) {  // beyond what is remembered: trust the nesting
      --depth;
      return true;
    }
    for (uint32_t k = depth; k-- > 0;) {
      if (ids[k] != id) continue;
      depth = k;
      detail = static_cast<uint8_t>(detail & ((1u << k) - 1));
      return true;
    }
    return false;
  }

  // The outermost open call's id, 0 when none.
  uint64_t Outermost() const { return depth > 0 ? ids[0] : 0; }

 private:
  // Pops the detail-tier calls on top: with that tier off, their exits will not come.
  void DropStale() {
    while (depth > 0 && depth <= kSlots && (detail >> (depth - 1)) & 1u) {
      --depth;
      detail = static_cast<uint8_t>(detail & ~(1u << depth));
    }
  }
};

}  // namespace truffld::inject
