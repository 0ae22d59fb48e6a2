// The "main process" rule of the profiler importers (Kineto, Nsight Systems), stated once.
//
// A profiler trace may hold several processes, and its device records name a device rather
// than the host process that launched them. The main process is the one making the most CUDA
// API calls (ties: the lower process id); without API calls, the process of the first event
// that names one. Each device event without a process gets the process of the API call with
// its correlation id, or the main process when no call has it.
// Thread-safety: operates on the caller's TraceFile only.
#pragma once

#include <cstdint>

#include "truffld/merge/event.h"

namespace truffld::merge {

// Applies the rule to `tf`: sets tf->meta.process_id to the main process (kNone when no event
// names a process) and gives the device events their process. Returns the main process.
int64_t AssignDeviceProcesses(TraceFile* tf);

}  // namespace truffld::merge
