// Formatting of records into JSONL lines of the truffld.events/1 contract.
//
// Pure functions: they take plain records (Record, GpuActivity, MetaInfo, StatsInfo) and append
// exactly one '\n'-terminated JSON object per call. Runs only on the writer thread, so the cost
// of text formatting stays off the application's hot path. Names that records refer to by
// handle (domains, categories, payload schemas) are resolved through a RecordContext.
// Thread-safety: stateless; the RecordContext implementation decides its own.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu_activity.h"
#include "truffld/json_escape.h"
#include "record.h"

namespace truffld::inject {

// What the formatter needs to know beyond a record's bytes.
class RecordContext {
 public:
  virtual ~RecordContext() = default;
  // Name of an interned NVTX domain handle; empty for the default domain.
  virtual std::string DomainName(const void* domain) const = 0;
  // Name given to a category with nvtxNameCategory, or empty when unnamed.
  virtual std::string CategoryName(const void* domain, uint32_t category) const = 0;
  // A decoded payload-extension payload as JSON object text, or empty when the schema is unknown.
  virtual std::string DecodePayload(const void* domain, uint64_t schema_id,
                                    std::string_view bytes) const = 0;
};

// The end of a plain NVTX line, `,"process_id":P,"thread_id":T}\n`, formatted once and kept
// while the process and thread ids stay the same: a drain walks one thread's ring at a time, so
// consecutive records share it and the writer copies it instead of printing two integers a
// record. It also keeps a time's digits above the last 8 (PutTime), which change every 0.1 s,
// and the first 4 of the last 8, which change every 10 µs.
// Thread-safety: none; one per formatting thread (the writer).
class LineTail {
 public:
  static constexpr size_t kBytes = 64;  // room for the longest end (two 20-digit ids)
  std::string_view For(int64_t pid, uint32_t tid);
  // Writes the end at p, which has room for kBytes (copied whole: a fixed-size copy is
  // cheaper than one of the end's length); returns the end of the line.
  char* PutAt(char* p, int64_t pid, uint32_t tid) {
    if (len_ == 0 || pid != pid_ || tid != tid_) For(pid, tid);
    std::memcpy(p, text_, kBytes);
    return p + len_;
  }
  // Writes the decimal digits of a time in ns at p, which has room for 20 + kBytes: the digits
  // above the last 8 change every 0.1 s and the 4 below them every 10 µs, so both are kept from
  // the line before.
  char* PutTime(char* p, int64_t ns);

 private:
  int64_t pid_ = 0;
  uint32_t tid_ = 0;
  size_t len_ = 0;  // 0: nothing kept yet
  char text_[kBytes] = {};
  uint64_t high_ = ~uint64_t{0};  // a time's digits above the last 8 (none kept yet) ...
  size_t high_len_ = 0;
  char high_text_[16] = {};       // ... as text (at most 12 digits)
  uint32_t mid_ = ~uint32_t{0};   // the first 4 of the last 8 digits (none kept yet) ...
  char mid_text_[4] = {};         // ... as text
};

// Longest name FormatPlainNvtxTo takes, and the most bytes it writes (with LineTail's slack).
inline constexpr size_t kPlainNvtxName = 512;
// `{"type":"NVTX_PUSH","name":"` and `","timestamp":` (42 bytes), the escaped name, 20 digits
// and the copied end.
inline constexpr size_t kPlainNvtxLineMax = 42 + JsonEscapedBound(kPlainNvtxName) + 20 + LineTail::kBytes;

// Writes the line of a plain NVTX record at p, which has room for kPlainNvtxLineMax bytes, and
// returns its end: a push, pop or mark in the default domain without category, colour, payload
// or truncated name, whose name has at most kPlainNvtxName bytes (what nvtxRangePushA,
// nvtxRangePop and nvtxMarkA produce). Returns nullptr (nothing written) for any other record.
// The bytes are FormatRecord's (the writer formats these straight into its output).
char* FormatPlainNvtxTo(char* p, const Record& r, std::string_view data, int64_t pid,
                        LineTail& tail);

// Appends one JSON line for a ring record. `data` holds the record's copied bytes. `tail`, when
// given, keeps the line end of plain NVTX records between calls (the bytes are the same).
void FormatRecord(const Record& r, std::string_view data, int64_t pid, const RecordContext& ctx,
                  std::string& out, LineTail* tail = nullptr);

// Appends one JSON line for a device activity.
void FormatGpuActivity(const GpuActivity& a, std::string& out);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from a CUDA device UUID's 16 bytes, as nvidia-smi
// and NVML spell it. Pure; thread-safe.
std::string FormatGpuUuid(const unsigned char bytes[16]);

struct DeviceInfo {
  int id = 0;
  std::string name;
  std::string uuid;
};

struct MetaInfo {
  std::string host;
  int64_t pid = 0;
  std::optional<int64_t> rank, local_rank, world_size;
  std::string clock;  // "realtime" or "monotonic_raw"
  int64_t sync_realtime_ns = 0, sync_monotonic_ns = 0;
  std::vector<std::string> cmdline;
  std::string injector_version;
  std::optional<int64_t> cuda_driver_version, cupti_version;
  std::vector<DeviceInfo> devices;
  std::vector<std::pair<std::string, std::string>> config;  // name -> value, as text
};
void FormatMeta(const MetaInfo& m, std::string& out);

void FormatClock(int64_t realtime_ns, int64_t monotonic_ns, std::string& out);

// One edge of a sampled device window (device_windows.h): {"type":"DEVICE_WINDOW",
// "edge":"start"|"end","id":N (the window),"timestamp":ns,"trigger":"step"|"time"|"exit",...}.
struct WindowMarkInfo {
  int64_t timestamp = 0;  // ns
  uint64_t window = 0;
  bool start = false;
  const char* trigger = "step";
  uint32_t tid = 0;
};
void FormatDeviceWindow(const WindowMarkInfo& m, int64_t pid, std::string& out);

struct StatsInfo {
  uint64_t written[kNumRecordKinds] = {};
  uint64_t dropped[kNumRecordKinds] = {};
  uint64_t cupti_dropped = 0;
  uint64_t api_unpaired = 0;                // API calls left out: one callback of the pair not seen
  uint64_t write_errors = 0;
  const char* dump_io = "";          // DumpSink::io_mode() ("": not written)
  const char* direct_io_stopped = "";  // DumpSink::direct_stopped() ("": not written)
  uint64_t payloads_too_large = 0;
  uint64_t names_truncated = 0;
  uint64_t ranges_dropped_push_pop = 0;    // NVTX push/pop ranges dropped whole
  uint64_t ranges_dropped_start_end = 0;   // NVTX start/end ranges dropped whole
  uint64_t unbalanced_closes = 0;          // pops/ends lost although their open was written
  uint64_t window_triggers_refused = 0;    // slow-step/collective windows the budget refused
  uint64_t window_period = 0;              // cost plan: the planned windows' period at the end
                                           // (steps); 0: another plan (not written)
  uint64_t rings = 0;
  uint64_t ring_bytes = 0;
  uint64_t activity_buffers = 0;
  uint64_t activity_buffers_denied = 0;
  std::string cupti_status;  // "ok", "unavailable: <why>", ...
};
void FormatStats(const StatsInfo& s, std::string& out);

}  // namespace truffld::inject
