// ledger.jsonl lines of the --slow-host node (see slow_host_ledger.h).
#include "truffld/synth/slow_host_ledger.h"

#include <algorithm>
#include <cstdio>

#include "truffld/synth/record_writer.h"  // JsonEscape

namespace truffld::synth {

std::string SlowHostLedgerLines(const std::vector<SlowHostSpan>& spans, size_t first_id, double factor) {
  std::vector<SlowHostSpan> sorted = spans;
  std::sort(sorted.begin(), sorted.end(), [](const SlowHostSpan& a, const SlowHostSpan& b) { return a.rank < b.rank; });
  char num[32];
  std::snprintf(num, sizeof num, "%.6g", factor);
  std::string out;
  for (size_t k = 0; k < sorted.size(); ++k) {
    const SlowHostSpan& s = sorted[k];
    out += "{\"id\":\"f" + std::to_string(first_id + k) +
           "\",\"class\":\"slow_host\",\"layer\":\"hardware\",\"target\":\"gpu\",\"rank\":" + std::to_string(s.rank) +
           ",\"host\":\"" + JsonEscape(s.host) + "\",\"scope\":\"host\",\"start\":" + std::to_string(s.start) +
           ",\"end\":" + std::to_string(s.end) + ",\"intensity\":" + num + ",\"level\":\"custom\",\"sufficient\":false" +
           ",\"first_step\":0,\"last_step\":" + std::to_string(std::max<int64_t>(0, s.steps - 1)) +
           ",\"clock\":\"realtime\"}\n";
  }
  return out;
}

}  // namespace truffld::synth
