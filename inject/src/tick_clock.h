// Cheap timestamps for the hot path, converted to the tracer clock on the writer thread.
//
// Reading the OS clock (clock_gettime) costs ~20-30 ns even through the vDSO; a push+pop pair
// needs two reads. On CPUs with an invariant counter (x86 TSC with constant_tsc+nonstop_tsc,
// the ARM generic timer) producers store raw counter ticks instead, and the writer converts them
// with TickClock: it samples (ticks, ns) anchor pairs at start and at every drain and maps ticks
// linearly, using the slope between the first and the latest anchor and the latest anchor as
// origin. Records are always drained after they were stamped, so conversion interpolates
// between anchors and its error stays at the anchors' sampling precision (sub-microsecond),
// while CUPTI's GPU times (ns from our timestamp callback) and host times share the clock.
// Without a usable counter (or TRUFFLD_TSC=0) ticks simply are ns and the slope is 1.
// Thread-safety: ReadTicks is safe anywhere; a TickClock is used by the writer thread only.
#pragma once

#include <time.h>

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace truffld::inject {

// Whether ReadTicks returns hardware counter ticks (true) or clock ns (false); decided once at
// start-up by Tracer before any event is recorded.
extern bool g_use_counter;
extern clockid_t g_tick_fallback_clock;

inline uint64_t ReadTicks() noexcept {
  if (g_use_counter) {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    asm volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#endif
  }
  timespec ts;
  clock_gettime(g_tick_fallback_clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// True when this machine has a counter safe to use across cores and power states.
bool CounterIsInvariant();

class TickClock {
 public:
  // Records an anchor: `ticks` and `ns` sampled back to back.
  void Anchor(uint64_t ticks, int64_t ns) noexcept {
    if (!has_first_) { first_ticks_ = ticks; first_ns_ = ns; has_first_ = true; }
    last_ticks_ = ticks;
    last_ns_ = ns;
    if (ticks > first_ticks_ + 1000) {
      slope_ = static_cast<double>(ns - first_ns_) / static_cast<double>(ticks - first_ticks_);
    }
  }
  // ns on the tracer clock for a tick value. With identity_ (no counter) returns ticks.
  int64_t ToNs(uint64_t ticks) const noexcept {
    if (identity_) return static_cast<int64_t>(ticks);
    const double d = static_cast<double>(static_cast<int64_t>(ticks - last_ticks_));
    return last_ns_ + static_cast<int64_t>(d * slope_ + (d >= 0 ? 0.5 : -0.5));
  }
  void set_identity(bool v) noexcept { identity_ = v; }
  void set_initial_slope(double ns_per_tick) noexcept { slope_ = ns_per_tick; }
  double slope() const noexcept { return slope_; }

 private:
  bool identity_ = true;
  bool has_first_ = false;
  uint64_t first_ticks_ = 0, last_ticks_ = 0;
  int64_t first_ns_ = 0, last_ns_ = 0;
  double slope_ = 1.0;
};

}  // namespace truffld::inject
