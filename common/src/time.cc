#include "truffld/time.h"

#include <time.h>

#include <cmath>
#include <cstdio>
#include <limits>

namespace truffld {

const char* ClockName(ClockId c) noexcept {
  return c == ClockId::kRealtime ? "realtime" : "monotonic_raw";
}

std::optional<ClockId> ParseClockName(std::string_view s) noexcept {
  if (s == "realtime") return ClockId::kRealtime;
  if (s == "monotonic_raw") return ClockId::kMonotonicRaw;
  return std::nullopt;
}

TimeNs NowNs(ClockId clock) noexcept {
  timespec ts{};
  clock_gettime(clock == ClockId::kRealtime ? CLOCK_REALTIME : CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<TimeNs>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

TimeNs MicrosToNs(double us) noexcept {
  long double ns = static_cast<long double>(us) * 1000.0L;
  if (!(ns < 9.2e18L && ns > -9.2e18L)) return ns > 0 ? std::numeric_limits<TimeNs>::max()
                                                       : std::numeric_limits<TimeNs>::min();
  return static_cast<TimeNs>(std::llround(static_cast<double>(ns)));
}

std::optional<TimeNs> ParseMicrosToNs(std::string_view t) noexcept {
  size_t i = 0;
  bool neg = false;
  if (i < t.size() && (t[i] == '-' || t[i] == '+')) neg = t[i++] == '-';
  if (i >= t.size()) return std::nullopt;
  // Exponent forms are rare in traces; fall back to long double for them.
  if (t.find_first_of("eE") != std::string_view::npos) {
    std::string s(t);
    char* end = nullptr;
    long double v = std::strtold(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(static_cast<double>(v))) return std::nullopt;
    long double ns = v * 1000.0L;
    if (!(ns < 9.2e18L && ns > -9.2e18L)) return std::nullopt;
    return static_cast<TimeNs>(std::llroundl(ns));
  }
  constexpr uint64_t kMaxUs = 9'000'000'000'000'000'000ULL / 1000;  // keeps ns inside int64
  uint64_t whole = 0;
  size_t digits = 0;
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++digits) {
    whole = whole * 10 + static_cast<uint64_t>(t[i] - '0');
    if (whole > kMaxUs) return std::nullopt;
  }
  uint64_t frac_ns = 0;  // first three fractional digits, as ns
  bool round_up = false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    size_t fd = 0;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++fd) {
      if (fd < 3) frac_ns = frac_ns * 10 + static_cast<uint64_t>(t[i] - '0');
      else if (fd == 3) round_up = t[i] >= '5';
    }
    if (fd == 0 && digits == 0) return std::nullopt;
    for (size_t k = fd; k < 3; ++k) frac_ns *= 10;
    digits += fd;
  }
  if (i != t.size() || digits == 0) return std::nullopt;
  uint64_t ns = whole * 1000 + frac_ns + (round_up ? 1 : 0);
  return neg ? -static_cast<TimeNs>(ns) : static_cast<TimeNs>(ns);
}

std::string FormatDurationNs(TimeNs ns) {
  char buf[64];
  double a = std::fabs(static_cast<double>(ns));
  if (a < 1e3) std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  else if (a < 1e6) std::snprintf(buf, sizeof buf, "%.3f us", ns / 1e3);
  else if (a < 1e9) std::snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3f s", ns / 1e9);
  return buf;
}

}  // namespace truffld
