// GpuActivity: one device-side activity (kernel, memcpy, memset, synchronization) in plain form.
//
// The CUPTI adapter converts each vendor activity record into this struct while the writer
// thread walks a completed CUPTI buffer, so formatting never sees a CUPTI type. Strings point
// into the CUPTI buffer or to static tables and are valid only during the conversion callback.
// Units: all times are ns on the tracer clock (CUPTI calls our timestamp callback).
// Thread-safety: plain data.
#pragma once

#include <cstdint>

#include "record.h"

namespace truffld::inject {

struct GpuActivity {
  RecordKind kind = RecordKind::kKernel;  // kKernel, kMemcpy, kMemset or kSync
  const char* name = nullptr;             // kernel name as CUPTI reports it
  int64_t start = 0;                      // ns
  int64_t end = 0;                        // ns
  uint64_t correlation_id = 0;
  uint32_t device = 0;
  uint32_t context = 0;
  uint32_t stream = 0;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  uint32_t registers = 0;
  uint64_t shared_memory = 0;             // static + dynamic bytes per block
  bool has_graph = false;
  uint32_t graph_id = 0;
  uint64_t graph_node_id = 0;
  uint64_t bytes = 0;
  const char* copy_kind = nullptr;        // "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"
  const char* src_kind = nullptr;         // memory kinds, e.g. "pageable", "device"
  const char* dst_kind = nullptr;
  const char* sync_kind = nullptr;        // "stream_synchronize", ...
  bool has_event = false;
  uint32_t event = 0;
};

}  // namespace truffld::inject
