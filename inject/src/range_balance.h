// Balanced drops for NVTX ranges: a range is written whole or dropped whole.
//
// When a ring is full the injector must drop events, but a dump holding the pop of a dropped
// push (or an end without its start) makes the merge guess which range it closes. So:
//  * push/pop: a push that cannot be written drops itself and every range nested in it; their
//    pops are dropped too. A written push reserves a ring slot for its pop (RecordRing's
//    Reserve), so the pop of a written push always finds room. Nesting deeper than
//    kMaxReservedDepth is written without a reservation (a leak of pushes never popped must not
//    eat the ring).
//  * start/end: a start that cannot be written hands the application an id with kDroppedBit;
//    its end is dropped. A written start takes one of Tracer::kStartCredits process-wide
//    credits (kCreditBit in the id); its end, on whatever thread, goes to that thread's ring,
//    or when that is full to the EndQueue, which has room for every credit.
// Whole ranges dropped are counted (STATS ranges_dropped), as is the only remaining imbalance:
// a close lost although its open was written (STATS unbalanced_closes): possible only for
// pushes nested deeper than kMaxReservedDepth or starts beyond the credits.
// CUDA API calls need nothing here: each is one record written when the call returns.
// Thread-safety: every function works on the calling thread's state (`t` is t_thread, passed
// down so that an NVTX call looks its thread-local state up once).
#pragma once

#include <cstdint>

#include "tracer.h"

namespace truffld::inject {

inline constexpr int32_t kMaxReservedDepth = 1024;
// Range ids handed to the application: bits 0..61 a process-wide sequence (what the dump
// shows), bit 62 set when the start holds a credit, bit 63 set when the start was dropped.
inline constexpr uint64_t kRangeSeqMask = (uint64_t{1} << 62) - 1;
inline constexpr uint64_t kCreditBit = uint64_t{1} << 62;
inline constexpr uint64_t kDroppedBit = uint64_t{1} << 63;

// NVTX push: returns true when written. `level` is the nesting depth before the push.
inline bool OpenNested(Tracer& tr, ThreadState& t, Record& r, int32_t level, const char* name,
                       size_t name_len, const char* payload, size_t payload_len) noexcept {
  if (t.drop_from) {  // inside a dropped range: dropped with it
    tr.CountDropped(r.kind);
    tr.CountRangeDropped(false);
    return false;
  }
  const Reserve rv = level < kMaxReservedDepth ? Reserve::kOpen : Reserve::kNone;
  if (tr.Emit(t, r, name, name_len, payload, payload_len, rv)) return true;
  t.drop_from = level + 1;
  tr.CountRangeDropped(false);
  return false;
}

// Writes a close (pop or end; r.payload_len set). The reservation covers one slot: a close
// whose payload does not fit in what is left is written bare (the payload counted as too
// large). Returns false when nothing was written (counted as a drop).
inline bool EmitClose(Tracer& tr, ThreadState& t, Record& r, const char* payload, size_t payload_len,
                      Reserve rv) noexcept {
  if (tr.Emit(t, r, nullptr, 0, payload, payload_len, rv, /*count_drop=*/false)) return true;
  if (payload_len && rv != Reserve::kNone) {
    r.payload_kind = PayloadKind::kNone;
    r.payload_value = 0;
    r.payload_len = 0;
    if (tr.Emit(t, r, nullptr, 0, nullptr, 0, rv, false)) {
      tr.CountPayloadTooLarge();
      return true;
    }
  }
  tr.CountDropped(r.kind);
  return false;
}

// NVTX pop. `level` is the level of the push it closes (-1 for a pop without a push).
inline void CloseNested(Tracer& tr, ThreadState& t, Record& r, int32_t level, const char* payload,
                        size_t payload_len) noexcept {
  if (t.drop_from && level >= t.drop_from - 1) {
    if (level == t.drop_from - 1) t.drop_from = 0;
    tr.CountDropped(r.kind);
    return;
  }
  const Reserve rv = level >= 0 && level < kMaxReservedDepth ? Reserve::kClose : Reserve::kNone;
  if (!EmitClose(tr, t, r, payload, payload_len, rv) && level >= 0) tr.CountUnbalanced();
}

// NVTX start: fills r.id and returns the id for the application.
inline uint64_t OpenStart(Tracer& tr, Record& r, uint64_t seq, const char* name, size_t name_len,
                          const char* payload, size_t payload_len) noexcept {
  const bool credit = tr.TakeStartCredit();
  r.id = seq & kRangeSeqMask;
  if (!tr.Emit(r, name, name_len, payload, payload_len)) {
    if (credit) tr.ReturnStartCredit();
    tr.CountRangeDropped(true);
    return r.id | kDroppedBit;
  }
  return credit ? r.id | kCreditBit : r.id;
}

// NVTX end of the range the application knows as `id`.
inline void CloseStart(Tracer& tr, Record& r, uint64_t id, const char* payload, size_t payload_len) noexcept {
  if (id & kDroppedBit) {  // its start was dropped (the range was counted then)
    tr.CountDropped(r.kind);
    return;
  }
  r.id = id & kRangeSeqMask;
  const bool credit = (id & kCreditBit) != 0;
  if (tr.Emit(r, nullptr, 0, payload, payload_len, Reserve::kNone, /*count_drop=*/false)) {
    if (credit) tr.ReturnStartCredit();
    return;
  }
  if (credit) {
    if (tr.QueueEnd(r)) {  // the credit comes back once the writer has written it
      if (payload_len) tr.CountPayloadTooLarge();
      return;
    }
    tr.ReturnStartCredit();
  }
  tr.CountDropped(r.kind);
  tr.CountUnbalanced();
}

}  // namespace truffld::inject
