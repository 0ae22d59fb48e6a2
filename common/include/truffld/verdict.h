// The closed vocabularies of a diagnosis, defined once with their spellings in trees.jsonl,
// diagnosis.jsonl, stats.json and the reports: the two views of a step, a unit's verdict, the
// cost that was judged, and where an expectation came from. truffld-merge writes views,
// truffld-diagnose reads them and writes the rest. Pure constants and functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace truffld {

// A step on one rank seen two ways: the operators it ran, or its communication.
enum class View : uint8_t { kVertical, kHorizontal };
inline constexpr int kViewCount = 2;  // for tables indexed by view
// "vertical" / "horizontal".
constexpr const char* ViewName(View v) noexcept { return v == View::kHorizontal ? "horizontal" : "vertical"; }
// Parses "vertical" / "horizontal"; false for anything else.
constexpr bool ParseView(std::string_view s, View* out) noexcept {
  if (s == "vertical") { *out = View::kVertical; return true; }
  if (s == "horizontal") { *out = View::kHorizontal; return true; }
  return false;
}
constexpr int ViewIndex(View v) noexcept { return static_cast<int>(v); }

// A (rank, step, view) unit's label.
enum class Verdict : uint8_t { kNormal, kAbnormal, kInsufficient };
// "normal", "abnormal", "insufficient_evidence".
constexpr const char* VerdictName(Verdict v) noexcept {
  return v == Verdict::kAbnormal ? "abnormal" : v == Verdict::kInsufficient ? "insufficient_evidence" : "normal";
}

// The cost of an operator instance that is judged.
enum class Metric : uint8_t {
  kHost = 0,    // own host time (self time minus time blocked on the device queue)
  kDevice = 1,  // own device time; for a matched collective: its transfer (end - last arrival)
};
inline constexpr int kMetricCount = 2;
constexpr const char* MetricName(Metric m) noexcept { return m == Metric::kHost ? "host" : "device"; }

// Where an expected cost came from: peers that did the same work.
//   kLayer  the same work signature in the same unit (other layers of a homogeneous model);
//   kTp     the same signature and occurrence in the same logical step on other ranks;
//   kTime   the same signature on the same rank in other steps of similar workload.
enum class PeerSource : uint8_t { kLayer = 0, kTp = 1, kTime = 2 };
inline constexpr int kPeerSourceCount = 3;
// "layers", "tp_peers", "similar_steps".
constexpr const char* PeerSourceName(PeerSource s) noexcept {
  return s == PeerSource::kLayer ? "layers" : s == PeerSource::kTp ? "tp_peers" : "similar_steps";
}

}  // namespace truffld
