// Formatting of raw event records for RankWriter (see record_writer.h).
#include "truffld/synth/record_writer.h"

#include <charconv>

#include "truffld/json_escape.h"

namespace truffld::synth {
namespace {

// Flush thresholds: the main thread's ring, the auxiliary thread's ring, and a CUPTI activity
// buffer (counted in records, like CUPTI's fixed-size buffers).
constexpr size_t kMainFlushBytes = 96 * 1024;
constexpr size_t kAuxFlushBytes = 8 * 1024;
constexpr uint32_t kActivityFlushRecords = 700;

// The types counted in the STATS record's records_written, in the order it lists them.
constexpr RecordType kCountedTypes[] = {RecordType::kMeta,   RecordType::kNvtxPush, RecordType::kNvtxPop,
                                        RecordType::kRuntime, RecordType::kDriver,  RecordType::kKernel,
                                        RecordType::kMemcpy, RecordType::kMemset,  RecordType::kSync,
                                        RecordType::kGraphNode, RecordType::kClock};

inline void Int(std::string& b, int64_t v) {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  b.append(tmp, r.ptr);
}
inline void Key(std::string& b, std::string_view k) {  // ,"k":
  b.push_back(',');
  b.push_back('"');
  b.append(k);
  b.append("\":");
}
inline void KInt(std::string& b, std::string_view k, int64_t v) {
  Key(b, k);
  Int(b, v);
}
inline void KStr(std::string& b, std::string_view k, std::string_view escaped) {
  Key(b, k);
  b.push_back('"');
  b.append(escaped);
  b.push_back('"');
}
inline void KTriple(std::string& b, std::string_view k, const std::array<int, 3>& v) {
  Key(b, k);
  b.push_back('[');
  Int(b, v[0]);
  b.push_back(',');
  Int(b, v[1]);
  b.push_back(',');
  Int(b, v[2]);
  b.push_back(']');
}

}  // namespace


std::string JsonEscape(std::string_view s) { return JsonEscaped(s); }  // truffld/json_escape.h

RankWriter::RankWriter(ByteSink* sink, int64_t pid, int64_t main_tid, int64_t aux_tid)
    : sink_(sink), pid_(pid), tids_{main_tid, aux_tid} {
  for (auto& b : bufs_) b.reserve(kMainFlushBytes + 4096);
}

std::string& RankWriter::Begin(Channel ch, RecordType t) {
  std::string& b = bufs_[static_cast<int>(ch)];
  b.append("{\"type\":\"");
  b.append(RecordTypeName(t));
  b.push_back('"');
  ++counts_[static_cast<size_t>(t)];
  ++total_;
  return b;
}

void RankWriter::End(Channel ch) {
  const int c = static_cast<int>(ch);
  std::string& b = bufs_[c];
  b.append("}\n");
  ++pending_[c];
  const bool full = c == 2 ? pending_[c] >= kActivityFlushRecords
                           : b.size() >= (c == 0 ? kMainFlushBytes : kAuxFlushBytes);
  if (full) FlushChannel(c);
}

void RankWriter::FlushChannel(int c) {
  std::string& b = bufs_[c];
  if (b.empty()) return;
  if (status_.ok()) status_ = sink_->Write(b);
  bytes_ += b.size();
  b.clear();
  pending_[c] = 0;
  ++flushes_[c];
}

void RankWriter::HostTail(std::string& b, Channel ch) {
  KInt(b, "process_id", pid_);
  KInt(b, "thread_id", tids_[ch == Channel::kAux ? 1 : 0]);
}

void RankWriter::Meta(const MetaFields& m) {
  std::string& b = Begin(Channel::kMain, RecordType::kMeta);
  KStr(b, "schema", "truffld.events/1");
  KStr(b, "host", JsonEscape(m.host));
  KInt(b, "process_id", m.pid);
  KInt(b, "rank", m.rank);
  KInt(b, "local_rank", m.local_rank);
  KInt(b, "world_size", m.world_size);
  KStr(b, "clock", "realtime");
  Key(b, "clock_sync");
  b.append("{\"realtime_ns\":");
  Int(b, m.realtime_ns);
  b.append(",\"monotonic_ns\":");
  Int(b, m.monotonic_ns);
  b.push_back('}');
  Key(b, "cmdline");
  b.append(m.cmdline_json);
  KStr(b, "injector_version", "truffld-synth 0.1.0 (synthetic)");
  KInt(b, "cuda_driver_version", 12080);
  KInt(b, "cupti_version", 26);
  Key(b, "devices");
  b.append("[{\"id\":");
  Int(b, m.device);
  b.append(",\"name\":\"");
  b.append(JsonEscape(m.device_name));
  b.append("\",\"uuid\":\"");
  b.append(JsonEscape(m.device_uuid));
  b.append("\"}]");
  Key(b, "config");
  b.append(m.config_json);
  End(Channel::kMain);
  FlushChannel(0);  // META is the first line of the file
}

// The always-on tier's ranges: steps and communication (NCCL's domain, the hooks' nccl:send/recv).
bool StepLevelRange(std::string_view name, std::string_view domain) {
  return !domain.empty() || name.substr(0, 18) == "step_execute_model" || name.substr(0, 5) == "nccl:";
}

void RankWriter::NvtxPush(Channel ch, std::string_view name_json, int64_t ts, std::string_view domain,
                          std::string_view payload) {
  if (discard_) return;
  const bool keep = detail_ != Detail::kStepLevel || StepLevelRange(name_json, domain);
  kept_[ch == Channel::kAux ? 1 : 0].push_back(keep);
  if (!keep) return;
  std::string& b = Begin(ch, RecordType::kNvtxPush);
  KStr(b, "name", name_json);
  KInt(b, "timestamp", ts);
  if (!domain.empty()) KStr(b, "domain", domain);
  if (!payload.empty()) {
    Key(b, "payload");
    b.append(payload);
  }
  HostTail(b, ch);
  End(ch);
}

void RankWriter::NvtxPop(Channel ch, int64_t ts, std::string_view domain) {
  if (discard_) return;
  std::vector<bool>& open = kept_[ch == Channel::kAux ? 1 : 0];
  const bool keep = open.empty() || open.back();
  if (!open.empty()) open.pop_back();
  if (!keep) return;
  std::string& b = Begin(ch, RecordType::kNvtxPop);
  KInt(b, "timestamp", ts);
  if (!domain.empty()) KStr(b, "domain", domain);
  HostTail(b, ch);
  End(ch);
}

void RankWriter::Api(Channel ch, bool driver, int cbid, std::string_view name, int64_t start, int64_t end,
                     int64_t correlation_id, int64_t stream, int64_t bytes, std::string_view copy_kind) {
  const bool blocking = blocking_next_ || name.find("Synchronize") != std::string_view::npos;
  blocking_next_ = false;
  if (discard_ || (detail_ == Detail::kStepLevel && !blocking)) return;
  std::string& b = Begin(ch, driver ? RecordType::kDriver : RecordType::kRuntime);
  KInt(b, "cbid", cbid);
  KStr(b, "name", name);
  KInt(b, "start", start);
  KInt(b, "end", end);
  KInt(b, "correlation_id", correlation_id);
  KInt(b, "return_code", 0);
  if (!copy_kind.empty()) KStr(b, "copy_kind", copy_kind);
  if (bytes >= 0) KInt(b, "bytes", bytes);
  if (stream >= 0) KInt(b, "stream", stream);
  HostTail(b, ch);
  End(ch);
}

void RankWriter::GraphNode(Channel ch, int64_t graph_id, int64_t node_id, int64_t correlation_id, int64_t ts,
                           int64_t original_node_id) {
  if (discard_) return;
  std::string& b = Begin(ch, RecordType::kGraphNode);
  KInt(b, "graph_id", graph_id);
  KInt(b, "graph_node_id", node_id);
  KInt(b, "correlation_id", correlation_id);
  KInt(b, "timestamp", ts);
  if (original_node_id >= 0) KInt(b, "original_graph_node_id", original_node_id);
  HostTail(b, ch);
  End(ch);
}

void RankWriter::Kernel(const KernelFields& k) {
  if (discard_ || detail_ != Detail::kFull) return;
  std::string& b = Begin(Channel::kActivity, RecordType::kKernel);
  KStr(b, "name", k.name_json);
  KInt(b, "gpu_start", k.start);
  KInt(b, "gpu_end", k.end);
  KInt(b, "correlation_id", k.correlation_id);
  KInt(b, "device", k.device);
  KInt(b, "stream", k.stream);
  KInt(b, "context", 1);
  KTriple(b, "grid", k.grid);
  KTriple(b, "block", k.block);
  KInt(b, "registers", k.registers);
  KInt(b, "shared_memory", k.shared_memory);
  if (k.graph_id >= 0) {
    KInt(b, "graph_id", k.graph_id);
    KInt(b, "graph_node_id", k.graph_node_id);
  }
  End(Channel::kActivity);
}

void RankWriter::Memcpy(std::string_view copy_kind, std::string_view src_kind, std::string_view dst_kind,
                        int64_t bytes, int64_t start, int64_t end, int64_t correlation_id, int device, int stream) {
  if (discard_ || detail_ != Detail::kFull) return;
  std::string& b = Begin(Channel::kActivity, RecordType::kMemcpy);
  KStr(b, "copy_kind", copy_kind);
  KStr(b, "src_kind", src_kind);
  KStr(b, "dst_kind", dst_kind);
  KInt(b, "bytes", bytes);
  KInt(b, "gpu_start", start);
  KInt(b, "gpu_end", end);
  KInt(b, "correlation_id", correlation_id);
  KInt(b, "device", device);
  KInt(b, "stream", stream);
  KInt(b, "context", 1);
  End(Channel::kActivity);
}

void RankWriter::Memset(int64_t bytes, int64_t start, int64_t end, int64_t correlation_id, int device, int stream) {
  if (discard_ || detail_ != Detail::kFull) return;
  std::string& b = Begin(Channel::kActivity, RecordType::kMemset);
  KInt(b, "bytes", bytes);
  KInt(b, "gpu_start", start);
  KInt(b, "gpu_end", end);
  KInt(b, "correlation_id", correlation_id);
  KInt(b, "device", device);
  KInt(b, "stream", stream);
  KInt(b, "context", 1);
  End(Channel::kActivity);
}

void RankWriter::Sync(std::string_view kind, int64_t start, int64_t end, int64_t correlation_id, int stream) {
  if (discard_) return;
  std::string& b = Begin(Channel::kActivity, RecordType::kSync);
  KStr(b, "sync_kind", kind);
  KInt(b, "start", start);
  KInt(b, "end", end);
  KInt(b, "correlation_id", correlation_id);
  KInt(b, "stream", stream);
  KInt(b, "context", 1);
  End(Channel::kActivity);
}

void RankWriter::DeviceWindow(bool start, int64_t id, int64_t ts, std::string_view trigger) {
  if (discard_) return;
  std::string& b = Begin(Channel::kMain, RecordType::kDeviceWindow);
  KStr(b, "edge", start ? "start" : "end");
  KInt(b, "id", id);
  KInt(b, "timestamp", ts);
  KStr(b, "trigger", trigger);
  HostTail(b, Channel::kMain);
  End(Channel::kMain);
}

void RankWriter::Clock(int64_t realtime_ns, int64_t monotonic_ns) {
  if (discard_) return;
  std::string& b = Begin(Channel::kMain, RecordType::kClock);
  Key(b, "clock_sync");
  b.append("{\"realtime_ns\":");
  Int(b, realtime_ns);
  b.append(",\"monotonic_ns\":");
  Int(b, monotonic_ns);
  b.push_back('}');
  End(Channel::kMain);
}

Status RankWriter::Finish() {
  FlushChannel(1);
  FlushChannel(2);
  FlushChannel(0);
  std::string& b = Begin(Channel::kMain, RecordType::kStats);
  Key(b, "records_written");
  b.push_back('{');
  for (const RecordType t : kCountedTypes) {
    if (t != kCountedTypes[0]) b.push_back(',');
    b.push_back('"');
    b.append(RecordTypeName(t));
    b.append("\":");
    Int(b, static_cast<int64_t>(counts_[static_cast<size_t>(t)]));
  }
  b.append("}");
  Key(b, "records_dropped");
  b.append("{}");
  KInt(b, "cupti_dropped", 0);
  Key(b, "buffers");
  b.append("{\"thread_rings\":2,\"activity_buffers\":");
  Int(b, static_cast<int64_t>(flushes_[2]));
  b.push_back('}');
  KInt(b, "write_errors", 0);
  b.append("}\n");
  FlushChannel(0);
  return status_;
}

}  // namespace truffld::synth
