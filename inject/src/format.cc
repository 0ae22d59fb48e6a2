// Formatting of records into JSONL: see format.h.
#include "format.h"

#include <charconv>
#include <cstring>

#include "json_out.h"

namespace truffld::inject {

namespace {

const char* ApiCopyKind(uint8_t aux) {
  // aux = 1 + cudaMemcpyKind (0 = not a copy).
  static const char* const kNames[] = {"HtoH", "HtoD", "DtoH", "DtoD", "Default"};
  if (aux == 0 || aux > 5) return nullptr;
  return kNames[aux - 1];
}

void AppendScalarPayload(const Record& r, JsonLine& j) {
  JsonObject p;
  const uint64_t bits = r.payload_value;
  switch (r.payload_kind) {
    case PayloadKind::kUint64: p.UInt("value", bits); break;
    case PayloadKind::kInt64: p.Int("value", static_cast<int64_t>(bits)); break;
    case PayloadKind::kUint32: p.UInt("value", static_cast<uint32_t>(bits)); break;
    case PayloadKind::kInt32: p.Int("value", static_cast<int32_t>(static_cast<uint32_t>(bits))); break;
    case PayloadKind::kDouble: { double d; std::memcpy(&d, &bits, sizeof d); p.Double("value", d); break; }
    case PayloadKind::kFloat: {
      float f; const auto u = static_cast<uint32_t>(bits); std::memcpy(&f, &u, sizeof f);
      p.Double("value", f); break;
    }
    default: return;
  }
  j.Raw("payload", p.Finish());
}

void AppendNvtxCommon(const Record& r, std::string_view data, const RecordContext& ctx,
                      JsonLine& j) {
  if (r.domain) {
    const std::string d = ctx.DomainName(r.domain);
    if (!d.empty()) j.Str("domain", d);
  }
  if (r.flags & kFlagHasCategory) {
    const std::string c = ctx.CategoryName(r.domain, r.category);
    if (c.empty()) j.UInt("category", r.category); else j.Str("category", c);
  }
  if (r.flags & kFlagHasColor) j.UInt("color", r.color);
  if (r.payload_kind == PayloadKind::kSchema) {
    std::string_view bytes = data.substr(r.name_len < data.size() ? r.name_len : data.size());
    std::string decoded = ctx.DecodePayload(r.domain, r.payload_value, bytes);
    if (decoded.empty()) {
      JsonObject p;
      p.UInt("schema_id", r.payload_value).UInt("size", bytes.size());
      decoded = p.Finish();
    }
    j.Raw("payload", decoded);
  } else if (r.payload_kind != PayloadKind::kNone) {
    AppendScalarPayload(r, j);
  }
}

std::string_view RecordName(const Record& r, std::string_view data) {
  if (r.name_ref) return r.name_ref;
  return data.substr(0, r.name_len < data.size() ? r.name_len : data.size());
}

// Copies a string literal's characters (without its terminating NUL) to p.
template <size_t N>
char* Put(char* p, const char (&lit)[N]) {
  std::memcpy(p, lit, N - 1);
  return p + N - 1;
}

template <class T>
char* PutInt(char* p, T v) {
  return std::to_chars(p, p + 20, v).ptr;
}

// "00".."99": two digits a lookup.
constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// The 4 decimal digits of v < 10^4, zero-padded, at p.
char* Put4Digits(char* p, uint32_t v) {
  std::memcpy(p, kDigitPairs + 2 * (v / 100), 2);
  std::memcpy(p + 2, kDigitPairs + 2 * (v % 100), 2);
  return p + 4;
}

// The 8 decimal digits of v < 10^8, zero-padded, at p.
char* Put8Digits(char* p, uint32_t v) { return Put4Digits(Put4Digits(p, v / 10000), v % 10000); }

}  // namespace

// The common NVTX record, formatted in one piece. The bytes are those of the general path in
// FormatRecord, which the tests check.
char* FormatPlainNvtxTo(char* p, const Record& r, std::string_view data, int64_t pid,
                        LineTail& tail) {
  if (r.domain || r.flags || r.payload_kind != PayloadKind::kNone) return nullptr;
  switch (r.kind) {
    case RecordKind::kNvtxPush:
    case RecordKind::kNvtxMark: {
      const std::string_view name = RecordName(r, data);
      if (name.size() > kPlainNvtxName) return nullptr;
      p = r.kind == RecordKind::kNvtxPush ? Put(p, "{\"type\":\"NVTX_PUSH\",\"name\":\"")
                                          : Put(p, "{\"type\":\"NVTX_MARK\",\"name\":\"");
      p = EscapeJsonTo(p, name);
      p = Put(p, "\",\"timestamp\":");
      break;
    }
    case RecordKind::kNvtxPop:
      p = Put(p, "{\"type\":\"NVTX_POP\",\"timestamp\":");
      break;
    default:
      return nullptr;
  }
  return tail.PutAt(tail.PutTime(p, r.t0), pid, r.tid);
}

char* LineTail::PutTime(char* p, int64_t ns) {
  if (ns < 100000000) return PutInt(p, ns);
  const auto u = static_cast<uint64_t>(ns);
  const uint64_t high = u / 100000000;
  if (high != high_) {
    char* e = high < 100000000 ? PutInt(high_text_, high)
                               : Put8Digits(PutInt(high_text_, high / 100000000), static_cast<uint32_t>(high % 100000000));
    high_len_ = static_cast<size_t>(e - high_text_);
    high_ = high;
  }
  std::memcpy(p, high_text_, sizeof high_text_);  // a fixed-size copy; the line has the room
  p += high_len_;
  // The last 8 digits: the first 4 of them change every 10 µs, so they are kept too.
  const auto low = static_cast<uint32_t>(u % 100000000);
  const uint32_t mid = low / 10000, last = low % 10000;
  if (mid != mid_) {
    Put4Digits(mid_text_, mid);
    mid_ = mid;
  }
  std::memcpy(p, mid_text_, 4);
  return Put4Digits(p + 4, last);
}

std::string_view LineTail::For(int64_t pid, uint32_t tid) {
  if (len_ == 0 || pid != pid_ || tid != tid_) {
    char* p = Put(text_, ",\"process_id\":");
    p = PutInt(p, pid);
    p = Put(p, ",\"thread_id\":");
    p = PutInt(p, tid);
    p = Put(p, "}\n");
    len_ = static_cast<size_t>(p - text_);
    pid_ = pid;
    tid_ = tid;
  }
  return {text_, len_};
}

void FormatRecord(const Record& r, std::string_view data, int64_t pid, const RecordContext& ctx,
                  std::string& out, LineTail* tail) {
  LineTail own;
  char buf[kPlainNvtxLineMax];
  if (const char* end = FormatPlainNvtxTo(buf, r, data, pid, tail ? *tail : own)) {
    out.append(buf, static_cast<size_t>(end - buf));
    return;
  }
  JsonLine j(out);
  j.Str("type", RecordKindName(r.kind));
  switch (r.kind) {
    case RecordKind::kNvtxPush:
    case RecordKind::kNvtxMark:
      j.Str("name", RecordName(r, data)).Int("timestamp", r.t0);
      AppendNvtxCommon(r, data, ctx, j);
      break;
    case RecordKind::kNvtxStart:
      j.UInt("id", r.id).Str("name", RecordName(r, data)).Int("timestamp", r.t0);
      AppendNvtxCommon(r, data, ctx, j);
      break;
    case RecordKind::kNvtxPop:
    case RecordKind::kNvtxEnd:
      if (r.kind == RecordKind::kNvtxEnd) j.UInt("id", r.id);
      j.Int("timestamp", r.t0);
      AppendNvtxCommon(r, data, ctx, j);  // domain, and a payload from nvtxRangePopPayload
      break;
    case RecordKind::kRuntime:
    case RecordKind::kDriver: {
      j.UInt("cbid", r.a).Str("name", RecordName(r, data)).Int("start", r.t0).Int("end", r.t1)
          .UInt("correlation_id", r.id);
      if (r.flags & kFlagHasReturnCode) j.Int("return_code", r.return_code);
      const char* ck = ApiCopyKind(r.aux8);
      if (ck) j.Str("copy_kind", ck);
      if (ck || r.b) j.UInt("bytes", r.b);
      if (r.c) j.UInt("stream", r.c);
      break;
    }
    case RecordKind::kGraphNode:
      j.UInt("graph_id", r.a).UInt("graph_node_id", r.b).UInt("correlation_id", r.id)
          .Int("timestamp", r.t0);
      if (r.flags & kFlagHasOriginal) j.UInt("original_graph_node_id", r.c);
      break;
    default:
      break;
  }
  if (r.flags & kFlagNameTruncated) j.Bool("name_truncated", true);
  j.Int("process_id", pid).UInt("thread_id", r.tid);
  j.End();
}

void FormatGpuActivity(const GpuActivity& a, std::string& out) {
  JsonLine j(out);
  j.Str("type", RecordKindName(a.kind));
  if (a.kind == RecordKind::kSync) {
    j.Str("sync_kind", a.sync_kind ? a.sync_kind : "unknown").Int("start", a.start)
        .Int("end", a.end).UInt("correlation_id", a.correlation_id);
    if (a.stream) j.UInt("stream", a.stream);
    if (a.has_event) j.UInt("event", a.event);
    j.UInt("context", a.context);
    j.End();
    return;
  }
  if (a.kind == RecordKind::kKernel) j.Str("name", a.name ? a.name : "");
  if (a.kind == RecordKind::kMemcpy) {
    j.Str("copy_kind", a.copy_kind ? a.copy_kind : "DtoD");
    if (a.src_kind) j.Str("src_kind", a.src_kind);
    if (a.dst_kind) j.Str("dst_kind", a.dst_kind);
  }
  if (a.kind == RecordKind::kMemcpy || a.kind == RecordKind::kMemset) j.UInt("bytes", a.bytes);
  j.Int("gpu_start", a.start).Int("gpu_end", a.end).UInt("correlation_id", a.correlation_id)
      .UInt("device", a.device).UInt("stream", a.stream).UInt("context", a.context);
  if (a.kind == RecordKind::kKernel) {
    j.Triple("grid", a.grid[0], a.grid[1], a.grid[2]).Triple("block", a.block[0], a.block[1], a.block[2])
        .UInt("registers", a.registers).UInt("shared_memory", a.shared_memory);
  }
  if (a.has_graph) j.UInt("graph_id", a.graph_id).UInt("graph_node_id", a.graph_node_id);
  j.End();
}

std::string FormatGpuUuid(const unsigned char bytes[16]) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0xf]);
  }
  return out;
}

void FormatMeta(const MetaInfo& m, std::string& out) {
  JsonLine j(out);
  j.Str("type", "META").Str("schema", "truffld.events/1").Str("host", m.host)
      .Int("process_id", m.pid);
  if (m.rank) j.Int("rank", *m.rank); else j.Null("rank");
  if (m.local_rank) j.Int("local_rank", *m.local_rank);
  if (m.world_size) j.Int("world_size", *m.world_size);
  j.Str("clock", m.clock);
  JsonObject sync;
  sync.Int("realtime_ns", m.sync_realtime_ns).Int("monotonic_ns", m.sync_monotonic_ns);
  j.Raw("clock_sync", sync.Finish());
  std::string cmd = "[";
  for (size_t i = 0; i < m.cmdline.size(); ++i) {
    if (i) cmd.push_back(',');
    AppendJsonString(cmd, m.cmdline[i]);
  }
  cmd.push_back(']');
  j.Raw("cmdline", cmd);
  j.Str("injector_version", m.injector_version);
  if (m.cuda_driver_version) j.Int("cuda_driver_version", *m.cuda_driver_version); else j.Null("cuda_driver_version");
  if (m.cupti_version) j.Int("cupti_version", *m.cupti_version); else j.Null("cupti_version");
  std::string devs = "[";
  for (size_t i = 0; i < m.devices.size(); ++i) {
    if (i) devs.push_back(',');
    JsonObject d;
    d.Int("id", m.devices[i].id).Str("name", m.devices[i].name);
    if (!m.devices[i].uuid.empty()) d.Str("uuid", m.devices[i].uuid);
    devs += d.Finish();
  }
  devs.push_back(']');
  j.Raw("devices", devs);
  JsonObject cfg;
  for (const auto& [k, v] : m.config) cfg.Str(k, v);
  j.Raw("config", cfg.Finish());
  j.End();
}

void FormatClock(int64_t realtime_ns, int64_t monotonic_ns, std::string& out) {
  JsonLine j(out);
  JsonObject sync;
  sync.Int("realtime_ns", realtime_ns).Int("monotonic_ns", monotonic_ns);
  j.Str("type", "CLOCK").Raw("clock_sync", sync.Finish());
  j.End();
}

void FormatDeviceWindow(const WindowMarkInfo& m, int64_t pid, std::string& out) {
  JsonLine j(out);
  j.Str("type", "DEVICE_WINDOW").Str("edge", m.start ? "start" : "end").UInt("id", m.window)
      .Int("timestamp", m.timestamp).Str("trigger", m.trigger).Int("process_id", pid)
      .UInt("thread_id", m.tid);
  j.End();
}

void FormatStats(const StatsInfo& s, std::string& out) {
  JsonObject written, dropped;
  for (int k = 0; k < kNumRecordKinds; ++k) {
    const char* name = RecordKindName(static_cast<RecordKind>(k));
    written.UInt(name, s.written[k]);
    dropped.UInt(name, s.dropped[k]);
  }
  JsonObject buffers;
  buffers.UInt("thread_rings", s.rings).UInt("thread_ring_bytes", s.ring_bytes)
      .UInt("activity_buffers", s.activity_buffers)
      .UInt("activity_buffers_denied", s.activity_buffers_denied);
  JsonObject ranges;
  ranges.UInt("push_pop", s.ranges_dropped_push_pop).UInt("start_end", s.ranges_dropped_start_end);
  JsonLine j(out);
  j.Str("type", "STATS").Raw("records_written", written.Finish())
      .Raw("records_dropped", dropped.Finish()).Raw("ranges_dropped", ranges.Finish())
      .UInt("unbalanced_closes", s.unbalanced_closes).UInt("cupti_dropped", s.cupti_dropped)
      .UInt("api_unpaired", s.api_unpaired)
      .UInt("window_triggers_refused", s.window_triggers_refused)
      .Raw("buffers", buffers.Finish()).UInt("write_errors", s.write_errors)
      .UInt("payloads_too_large", s.payloads_too_large).UInt("names_truncated", s.names_truncated)
      .Str("cupti_status", s.cupti_status);
  if (s.window_period) j.UInt("window_period", s.window_period);
  if (*s.dump_io) j.Str("dump_io", s.dump_io);
  if (*s.direct_io_stopped) j.Str("direct_io_stopped", s.direct_io_stopped);
  j.End();
}

}  // namespace truffld::inject
