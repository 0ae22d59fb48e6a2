// Pass 6b, end state: where a process stood when its dump stopped.
//
// A process that exits normally writes STATS last and leaves nothing open. One that hung and
// was killed leaves a dump cut mid-line whose last ranges never closed; what it was inside
// (step > operator > collective), how far it got in each communicator's sequence of
// collectives, and the device work it launched whose completion was never recorded are the
// facts from which truffld-diagnose --hang names a hang's culprit by comparing ranks
// (diagnose/hang/). Summary.json carries them per file ("end_state"; merge/README.md, "End
// state").
//
// Rules:
//   - open frames: the ranges pass 1 closed at the file's end, per thread, outermost first;
//   - collectives: comm-layer ranges whose NVTX payload names a communicator ("comm"), plus
//     outermost comm ranges with no such range inside (pynccl, c10d with no payload), grouped by
//     communicator (payload "comm", else "op:<family>"), counted in start order; the last one
//     entered is kept with its bytes, world size and whether it was still open;
//   - pending launches: launch and async copy/memset calls whose correlation id no recorded
//     device op carries, made at or after the file's last recorded device op began (older ones
//     are device work outside the sampled windows, not work that never finished). CUPTI
//     delivers an op's record once it finished and the injector flushes every 500 ms, so a
//     pending launch is work that never finished or finished in the last flush interval.
// Input: the TraceFile (file clock), its ClockMap, passes 1, 3 and 6. Output: FileEndState on
// the merged axis. Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device_links.h"
#include "core/nest.h"
#include "truffld/merge/end_state.h"
#include "truffld/merge/pipeline.h"

namespace truffld::merge {

FileEndState EndStateOf(const TraceFile& file, const ClockMap& clock, const std::vector<HostRange>& ranges,
                        const std::vector<uint32_t>& open_at_end, const Nesting& nesting, const DeviceLinks& links);

// The communicator a collective's compact-JSON NVTX payload names ("comm": string or number),
// or "" when it names none. Thread-safety: pure function.
std::string CommunicatorOf(std::string_view payload);

}  // namespace truffld::merge
