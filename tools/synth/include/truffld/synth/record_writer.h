// RankWriter: formats one rank's raw events exactly as the injector writes them.
//
// A real injector keeps one buffer per producing thread and one for CUPTI activity records and
// flushes each when it fills, so a dump is grouped by producer rather than sorted by time. The
// writer reproduces that: records go to one of three channels (the main Python thread, an
// auxiliary host thread, and the CUPTI activity buffer), each flushed to the sink when it passes
// its own size, and STATS closes the file. Field names and order follow the contract
// (../shared/contract/events-v1.md) and the injector's formatter. Names are passed already
// JSON-escaped (see JsonEscape) because the generator reuses a small set of names millions of
// times. All times are int64 ns on the file's clock (the host's realtime clock).
// Thread-safety: one RankWriter per rank, used by one thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "truffld/status.h"
#include "truffld/synth/byte_sink.h"
#include "truffld/wire.h"

namespace truffld::synth {

// JSON string escaping of `s` (without the surrounding quotes).
std::string JsonEscape(std::string_view s);

// Record types and their spelling: the shared wire vocabulary (truffld/wire.h).
using truffld::RecordType;
using truffld::RecordTypeName;

enum class Channel : uint8_t { kMain, kAux, kActivity };

// What the capture records at the moment (the injector's tiers): everything; no device activity
// (outside a device window); or only the always-on tier (outside a detail window in two-tier
// mode: step ranges, communication ranges, blocking API calls, SYNC, graph nodes, clocks).
enum class Detail : uint8_t { kFull, kNoDevice, kStepLevel };

struct MetaFields {
  std::string host;
  int64_t pid = 0;
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int64_t realtime_ns = 0;   // clock_sync pair sampled at start
  int64_t monotonic_ns = 0;
  std::string cmdline_json;  // a JSON array text
  std::string device_name;
  std::string device_uuid;
  int device = 0;
  std::string config_json;   // a JSON object text
};

struct KernelFields {
  std::string_view name_json;  // escaped
  int64_t start = 0, end = 0, correlation_id = 0;
  int device = 0, stream = 0;
  std::array<int, 3> grid{1, 1, 1}, block{128, 1, 1};
  int registers = 32, shared_memory = 0;
  int64_t graph_id = -1, graph_node_id = -1;  // -1 = not from a graph
};

class RankWriter {
 public:
  RankWriter(ByteSink* sink, int64_t pid, int64_t main_tid, int64_t aux_tid);

  void Meta(const MetaFields& m);
  // Host records on `ch` (kMain or kAux). domain/payload empty = omitted; payload is JSON text.
  void NvtxPush(Channel ch, std::string_view name_json, int64_t ts, std::string_view domain = {},
                std::string_view payload = {});
  void NvtxPop(Channel ch, int64_t ts, std::string_view domain = {});
  // RUNTIME (driver=false) or DRIVER call. stream < 0 and bytes < 0 omit those fields.
  void Api(Channel ch, bool driver, int cbid, std::string_view name, int64_t start, int64_t end,
           int64_t correlation_id, int64_t stream = -1, int64_t bytes = -1,
           std::string_view copy_kind = {});
  void GraphNode(Channel ch, int64_t graph_id, int64_t node_id, int64_t correlation_id, int64_t ts,
                 int64_t original_node_id = -1);
  // Activity records.
  void Kernel(const KernelFields& k);
  void Memcpy(std::string_view copy_kind, std::string_view src_kind, std::string_view dst_kind,
              int64_t bytes, int64_t start, int64_t end, int64_t correlation_id, int device, int stream);
  void Memset(int64_t bytes, int64_t start, int64_t end, int64_t correlation_id, int device, int stream);
  void Sync(std::string_view kind, int64_t start, int64_t end, int64_t correlation_id, int stream);
  void Clock(int64_t realtime_ns, int64_t monotonic_ns);
  // A DEVICE_WINDOW edge on the main thread (trigger "step" or "exit").
  void DeviceWindow(bool start, int64_t id, int64_t ts, std::string_view trigger);
  // The tier records are filtered by from now on; a range pushed under one tier is popped (or
  // dropped) with it.
  void set_detail(Detail d) { detail_ = d; }
  // The next Api call blocks the host (a pageable copy): the always-on tier keeps it.
  void MarkBlockingCall() { blocking_next_ = true; }

  // Flushes every channel, writes STATS and reports the first write error, if any. The sink is
  // not closed (its owner does that).
  Status Finish();
  uint64_t records() const { return total_; }
  // While set, every record is dropped unformatted (the simulator's counterfactual re-runs).
  void set_discard(bool on) { discard_ = on; }
  uint64_t bytes_written() const { return bytes_; }

 private:
  std::string& Begin(Channel ch, RecordType t);
  void End(Channel ch);
  void HostTail(std::string& b, Channel ch);
  void FlushChannel(int ch);

  ByteSink* sink_;
  int64_t pid_;
  int64_t tids_[2];
  std::string bufs_[3];
  uint32_t pending_[3] = {0, 0, 0};
  std::array<uint64_t, truffld::kRecordTypeCount> counts_{};
  uint64_t total_ = 0;
  uint64_t bytes_ = 0;
  uint64_t flushes_[3] = {0, 0, 0};
  Status status_;
  bool discard_ = false;
  Detail detail_ = Detail::kFull;
  bool blocking_next_ = false;
  std::vector<bool> kept_[2];  // per host channel: whether each open NVTX push was written
};

}  // namespace truffld::synth
