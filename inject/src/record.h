// Plain fixed-size event records: the unit the hot path writes and the writer thread formats.
//
// Every captured event (NVTX call, CUDA API call, graph-node creation, GPU activity) becomes one
// 96-byte Record header followed in its thread's ring by its copied bytes (names, binary NVTX
// payloads); record_ring.h stores plain NVTX pushes and pops in a 16-byte compact form. Records
// hold no owning pointers: names are either copied after the header or refer to strings that
// live for the whole process (NVTX registered strings, CUPTI's static API names, interned domains). No vendor
// (CUPTI/NVTX) type appears here, so formatting and tests need neither.
// Units: every time field is integer nanoseconds on the tracer's one clock (see clock.h).
// Thread-safety: plain data; a Record is written by one thread and read by the writer thread
// after the ring buffer's release/acquire hand-off.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace truffld::inject {

enum class RecordKind : uint8_t {
  kNvtxPush = 0,
  kNvtxPop,
  kNvtxStart,
  kNvtxEnd,
  kNvtxMark,
  kRuntime,
  kDriver,
  kGraphNode,
  kKernel,
  kMemcpy,
  kMemset,
  kSync,
  kCount,  // number of kinds; not a record
};
inline constexpr int kNumRecordKinds = static_cast<int>(RecordKind::kCount);

// The "type" string a kind is written as (contract events-v1).
const char* RecordKindName(RecordKind k) noexcept;

// Flag bits in Record::flags.
enum RecordFlag : uint8_t {
  kFlagHasColor = 1 << 0,
  kFlagHasCategory = 1 << 1,
  kFlagNameTruncated = 1 << 2,  // the name was longer than kMaxNameBytes and was cut
  kFlagHasReturnCode = 1 << 3,
  kFlagHasGraph = 1 << 4,       // graph_id / graph_node_id fields are meaningful
  kFlagHasOriginal = 1 << 5,    // GRAPH_NODE clone: original_graph_node_id is meaningful
};

// How an NVTX payload is stored (Record::payload_kind).
enum class PayloadKind : uint8_t {
  kNone = 0, kUint64, kInt64, kDouble, kUint32, kInt32, kFloat,
  kSchema,  // binary payload of the NVTX payload extension; bytes follow the name
};

// One record's header (its copied bytes follow it in the ring). Field meaning per kind:
//   NVTX_*:   t0 = timestamp, id = range id (START/END), domain, name, color, category,
//             payload_kind/payload_value/payload_schema (+ payload bytes after the name).
//   RUNTIME/DRIVER: t0 = start, t1 = end, id = correlation id, a = cbid, b = bytes,
//             c = stream handle, aux8 = copy kind (1 + cudaMemcpyKind, 0 = none),
//             return_code, name_ref = the API's name (static string).
//   GRAPH_NODE: t0 = timestamp, id = correlation id, a = graph id, b = node id,
//             c = original node id (clone).
//   KERNEL/MEMCPY/MEMSET/SYNC: never stored in rings (the writer formats CUPTI buffers
//             directly from GpuActivity, see gpu_activity.h); listed for STATS counting.
struct Record {
  RecordKind kind;
  uint8_t flags;
  uint8_t aux8;
  PayloadKind payload_kind;
  uint32_t tid;            // OS thread id (gettid)
  int64_t t0;              // ns
  int64_t t1;              // ns
  uint64_t id;
  uint64_t a;
  uint64_t b;
  uint64_t c;
  const void* domain;      // interned Domain* (nullptr = default domain)
  const char* name_ref;    // process-lifetime string, or nullptr when the name is copied
  uint32_t category;
  uint32_t color;
  int32_t return_code;
  uint16_t name_len;       // bytes of copied name (after the header in the ring)
  uint16_t payload_len;    // bytes of binary payload after the name
  uint64_t payload_value;  // raw bits of a scalar payload, or the schema id for kSchema

  // Total bytes of copied data (name then payload) carried by this record.
  size_t data_len() const noexcept { return size_t{name_len} + payload_len; }
};
static_assert(sizeof(Record) == 96, "a Record header is six 16-byte ring units");

// Thread rings are sized in slots of this many bytes (TRUFFLD_THREAD_BUFFER_KB / kSlotBytes).
inline constexpr size_t kSlotBytes = 128;
// Longer names are cut and flagged. Large enough for a step naming a thousand requests
// (hooks' step names carry every request id); name_len is 16 bits.
inline constexpr size_t kMaxNameBytes = 65535;
inline constexpr size_t kMaxWideNameBytes = 8192;  // wide names are converted on the stack
inline constexpr size_t kMaxPayloadBytes = 1024;   // longer payloads are not copied (counted)

}  // namespace truffld::inject
