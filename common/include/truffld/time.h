// Nanosecond time helpers shared by all stages.
//
// truffld keeps every timestamp as a signed 64-bit count of nanoseconds (TimeNs) on one clock
// per file; which clock is named by the file's META record (ClockId). Conversions from
// fractional microseconds (Kineto's "ts"/"dur") go through the decimal text, not a double, so a
// 16-digit epoch timestamp converts without rounding drift.
// Thread-safety: all functions are pure or read only the OS clock; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace truffld {

using TimeNs = int64_t;

enum class ClockId { kRealtime, kMonotonicRaw };
const char* ClockName(ClockId c) noexcept;                        // "realtime" / "monotonic_raw"
std::optional<ClockId> ParseClockName(std::string_view s) noexcept;

// Reads the OS clock (clock_gettime), in ns.
TimeNs NowNs(ClockId clock) noexcept;

// Parses a decimal number of microseconds ("12.5", "-3", "1718228880623147.250", "1e3") into
// integer ns, rounding half away from zero below 1 ns. Returns nullopt on malformed text or
// overflow. Plain decimals are converted exactly; exponent forms go through long double.
std::optional<TimeNs> ParseMicrosToNs(std::string_view text) noexcept;

// Same for a number already held as a double (used when the text is not available).
TimeNs MicrosToNs(double us) noexcept;

// Human form for messages: "812 ns", "3.250 us", "41.002 ms", "2.500 s".
std::string FormatDurationNs(TimeNs ns);

}  // namespace truffld
