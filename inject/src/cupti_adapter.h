// CUPTI adapter: the only part of truffld that includes cupti.h.
//
// StartCupti loads libcupti at run time (TRUFFLD_CUPTI_LIBRARY, else the usual sonames, else
// the toolkit's copy found at build time), registers CUPTI's timestamp callback so GPU times
// land on the tracer clock, subscribes to runtime/driver API and graph-node resource callbacks,
// and enables kernel, memcpy, memset and synchronization activity into buffers from the
// tracer's bounded pool. Any failure (no driver, no GPU, another subscriber, missing library)
// is logged once with the "truffld:" prefix, recorded in STATS.cupti_status, and leaves the
// process and NVTX capture running: a subscriber conflict keeps activity tracing, anything
// else disables CUPTI capture.
// Thread-safety: StartCupti once (from InitializeInjection); callbacks run on CUDA/CUPTI threads.
#pragma once

namespace truffld::inject {

class Tracer;
// Returns true when at least activity capture works.
bool StartCupti(Tracer* tracer);

}  // namespace truffld::inject
