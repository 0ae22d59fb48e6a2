// Hand-built what-if replay items for the replay tests (replay_test.cc, device_idle_test.cc).
#pragma once

#include <cstdint>

#include "peer/replay.h"

namespace truffld::diagnose::test {

// A host operator from a to b (us) that launched device work [ds, de] (us) at `launch` (none
// when launch < 0), its calls blocked `wait` us on the device.
inline ReplayItem ReplayOp(int64_t a, int64_t b, int64_t launch = -1, int64_t ds = 0, int64_t de = 0,
                           int64_t wait = 0) {
  ReplayItem it;
  it.host_start = a * 1000;
  it.host_end = b * 1000;
  it.wait_ns = wait * 1000;
  if (launch >= 0) {
    it.has_device = true;
    it.launch = launch * 1000;
    it.device_start = ds * 1000;
    it.device_end = de * 1000;
  }
  return it;
}

}  // namespace truffld::diagnose::test
