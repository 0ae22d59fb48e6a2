// The one NVTX push/pop pairing rule.
//
// A thread's pushes and pops are taken in time order, equal times in file order; a pop closes
// the innermost push of its thread that is still open; a pop with nothing open is unmatched.
// Range reconstruction (host_ranges.cc) applies it to every thread after sorting, and the raw
// importer (importers/raw/raw_parser.cc) applies it while reading, to fold each pop into its
// push, for as long as a thread's records arrive in that order (InPairingOrder): both go
// through this class, so the two can never pair differently.
// Thread-safety: one per thread being paired; plain value.
#pragma once

#include <cstdint>
#include <vector>

#include "truffld/time.h"

namespace truffld::merge {

class PushPopPairing {
 public:
  static constexpr uint32_t kUnmatched = UINT32_MAX;
  // A push opens a range; `open` is the caller's handle for it (an event or range index).
  void Push(uint32_t open) { open_.push_back(open); }
  // A pop closes the innermost open push: returns its handle, or kUnmatched when none is open.
  uint32_t Pop() {
    if (open_.empty()) return kUnmatched;
    const uint32_t o = open_.back();
    open_.pop_back();
    return o;
  }
  // The pushes still open, outermost first.
  const std::vector<uint32_t>& open() const { return open_; }
  // Forgets every open push (and frees the memory).
  void Reset() { std::vector<uint32_t>().swap(open_); }

 private:
  std::vector<uint32_t> open_;
};

// Whether a push or pop at time `t` may follow one at `prev` on the same thread in the order
// the rule visits them (time order; equal times keep file order).
inline bool InPairingOrder(TimeNs prev, TimeNs t) { return t >= prev; }

}  // namespace truffld::merge
