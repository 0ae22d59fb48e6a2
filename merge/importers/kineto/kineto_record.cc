// Reading one Kineto trace event (simdjson on-demand) and mapping it to the event model.
#include "importers/kineto/kineto_record.h"

#include <charconv>

#include "truffld/time.h"

namespace truffld::merge::kineto {
namespace {

namespace od = simdjson::ondemand;

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// A string's text without unescaping it, when it holds no escape: `raw` starts just after its
// opening quote (simdjson has checked UTF-8 and control bytes, and that the string ends).
bool PlainText(const char* raw, std::string_view* out) {
  const char* p = raw;
  while (*p != '"' && *p != '\\') ++p;
  if (*p == '\\') return false;
  *out = std::string_view(raw, size_t(p - raw));
  return true;
}

// A field's key: a view into the document when it has no escapes (nearly always), unescaped by
// simdjson otherwise (which copies it).
simdjson::error_code ReadKey(simdjson::simdjson_result<od::field>& field, std::string_view* key) {
  od::raw_json_string raw;
  if (auto e = field.key().get(raw)) return e;
  if (PlainText(raw.raw(), key)) return simdjson::SUCCESS;
  return field.unescaped_key().get(*key);
}

// A string value, the same way: false when it is not a string (or has a bad escape).
bool ReadString(od::value& v, std::string_view* out) {
  const std::string_view token = v.raw_json_token();
  if (!token.empty() && token[0] == '"' && PlainText(token.data() + 1, out)) return true;
  return v.get_string().get(*out) == simdjson::SUCCESS;
}

// Reads an integer field; a float is truncated toward zero (Kineto writes ints, but be lenient).
bool ReadInt(od::value& v, int64_t* out) {
  int64_t i = 0;
  if (v.get_int64().get(i) == simdjson::SUCCESS) {
    *out = i;
    return true;
  }
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS && d > -9.2e18 && d < 9.2e18) {
    *out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

// HIP traces write some integers as strings ("bytes": "128"); accept those too.
bool ReadOptInt(od::value& v, std::optional<int64_t>* out) {
  int64_t i = 0;
  std::string_view s;
  if (ReadString(v, &s)) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
    if (ec != std::errc() || p != s.data() + s.size()) return false;
  } else if (!ReadInt(v, &i)) {
    return false;
  }
  *out = i;
  return true;
}

// Reads up to three integers of a JSON array ("grid": [x, y, z]) into int32 slots.
bool ReadDim3(od::value& v, int32_t out[3]) {
  od::array arr;
  if (v.get_array().get(arr) != simdjson::SUCCESS) return false;
  int n = 0;
  for (auto item : arr) {
    od::value iv;
    if (item.get(iv) != simdjson::SUCCESS) return false;
    int64_t x = 0;
    if (!ReadInt(iv, &x)) return false;
    if (n < 3) out[n] = static_cast<int32_t>(x);
    ++n;
  }
  return true;
}

// Reads a pid/tid: an integer, or a string: older PyTorch exports write "pid": "CPU functions"
// or "tid": "1", and Kineto uses "Spans", "Traces" for its own tracks. A string holding an
// integer is that integer; another string names its track (*is_name; *out = TrackIdOf).
void ReadId(od::value& v, bool* has, bool* is_int, bool* is_name, int64_t* out) {
  *has = true;
  od::json_type t;
  if (v.type().get(t) != simdjson::SUCCESS) return;
  if (t == od::json_type::number) *is_int = ReadInt(v, out);
  std::string_view s;
  if (t != od::json_type::string || !ReadString(v, &s)) return;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  *is_int = !s.empty() && ec == std::errc() && p == s.data() + s.size();
  *is_name = !*is_int;
  if (*is_name) *out = TrackIdOf(s);
}

simdjson::error_code ReadArgs(od::value& v, KinetoRecord* rec) {
  od::object args;
  if (v.get_object().get(args) != simdjson::SUCCESS) {
    if (rec->bad_field.empty()) rec->bad_field = "args";
    return simdjson::SUCCESS;
  }
  // The object's text first (kept for trace.json), then its members from the start again.
  if (auto e = args.raw_json().get(rec->args_text)) return e;
  rec->args_text = TrimRight(rec->args_text);
  if (auto e = args.reset().error()) return e;
  for (auto field : args) {
    std::string_view key;
    if (auto e = ReadKey(field, &key)) return e;
    od::value fv;
    if (auto e = field.value().get(fv)) return e;
    bool ok = true, optional = false;
    if (key == "correlation") ok = ReadOptInt(fv, &rec->correlation);
    else if (key == "device") ok = ReadOptInt(fv, &rec->device);
    else if (key == "stream") ok = ReadOptInt(fv, &rec->stream);
    else if (key == "cbid" || key == "cid") ok = ReadOptInt(fv, &rec->cbid), optional = true;
    else if (key == "bytes") ok = ReadOptInt(fv, &rec->bytes), optional = true;
    else if (key == "grid") ok = ReadDim3(fv, rec->grid), optional = true;
    else if (key == "block") ok = ReadDim3(fv, rec->block), optional = true;
    else if (key == "kind" && !ReadString(fv, &rec->copy_kind))
      rec->copy_kind = {};  // HIP writes a numeric hipMemcpyKind here; the name tells instead
    if (ok) continue;
    std::string_view& slot = optional ? rec->ignored_field : rec->bad_field;
    if (slot.empty()) slot = key == "cid" ? "cbid" : key;
  }
  return simdjson::SUCCESS;
}

// Number text for ts/dur: must be a JSON number; kept as text for exact conversion.
bool ReadNumberText(od::value& v, std::string_view* out) {
  od::json_type t;
  if (v.type().get(t) != simdjson::SUCCESS || t != od::json_type::number) return false;
  std::string_view raw;
  raw = v.raw_json_token();
  *out = TrimRight(raw);
  return true;
}

// Without `cat` (older PyTorch exports write none), a complete event is a host range.
bool IsHostRangeCat(std::string_view c) {
  return c == "cpu_op" || c == "user_annotation" || c == "gpu_user_annotation" ||
         c == "python_function" || c.data() == nullptr;
}

}  // namespace

int64_t TrackIdOf(std::string_view name) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64-bit
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>((uint64_t{1} << 40) | (h & ((uint64_t{1} << 40) - 1)));
}

simdjson::error_code ReadKinetoRecord(od::object obj, KinetoRecord* rec) {
  for (auto field : obj) {
    std::string_view key;
    if (auto e = ReadKey(field, &key)) return e;
    od::value v;
    if (auto e = field.value().get(v)) return e;
    bool ok = true;
    if (key == "ph") ok = ReadString(v, &rec->ph);
    else if (key == "cat") ok = ReadString(v, &rec->cat);
    else if (key == "name") ok = ReadString(v, &rec->name);
    else if (key == "ts") ok = ReadNumberText(v, &rec->ts_text);
    else if (key == "dur") ok = ReadNumberText(v, &rec->dur_text);
    else if (key == "pid") ReadId(v, &rec->has_pid, &rec->pid_is_int, &rec->pid_is_name, &rec->pid);
    else if (key == "tid") ReadId(v, &rec->has_tid, &rec->tid_is_int, &rec->tid_is_name, &rec->tid);
    else if (key == "args") {
      if (auto e = ReadArgs(v, rec)) return e;
    }
    if (!ok && rec->bad_field.empty()) rec->bad_field = key;
  }
  return simdjson::SUCCESS;
}

Problem SkipKey(std::string_view ph, std::string_view cat) {
  if (ph == "M") return Problem::kKinetoSkippedMetadata;
  if (ph == "s" || ph == "f" || ph == "t") {
    if (cat == "ac2g") return Problem::kKinetoSkippedFlowAc2g;
    if (cat == "async_cpu_to_gpu") return Problem::kKinetoSkippedFlowAsync;
    if (cat == "fwdbwd") return Problem::kKinetoSkippedFlowFwdbwd;
    return Problem::kKinetoSkippedFlowOther;
  }
  if (ph == "i" || ph == "I") {
    if (cat == "cpu_instant_event") return Problem::kKinetoSkippedInstantCpu;
    return Problem::kKinetoSkippedInstantOther;
  }
  if (ph == "C") return Problem::kKinetoSkippedCounter;
  if (ph == "X") {
    if (cat == "Trace") return Problem::kKinetoSkippedTrace;
    if (cat == "overhead") return Problem::kKinetoSkippedOverhead;
    return Problem::kKinetoSkippedComplete;
  }
  if (ph.empty()) return Problem::kKinetoSkippedNoPh;
  return Problem::kKinetoSkippedOtherPh;
}

std::string_view CopyKindOf(std::string_view kind_arg, std::string_view name) {
  static constexpr std::string_view kKinds[] = {"HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
  for (auto k : kKinds)
    if (kind_arg == k) return k;
  for (auto k : kKinds)
    if (name.find(k) != std::string_view::npos) return k;
  return {};
}

Mapped MapKinetoRecord(const KinetoRecord& rec, StringPool* pool) {
  Mapped m;
  if (rec.ph != "X") {
    m.key = SkipKey(rec.ph, rec.cat);
    return m;
  }
  EventKind kind;
  if (IsHostRangeCat(rec.cat)) kind = EventKind::kRange;
  else if (rec.cat == "cuda_runtime") kind = EventKind::kRuntime;
  else if (rec.cat == "cuda_driver") kind = EventKind::kDriver;
  else if (rec.cat == "kernel") kind = EventKind::kKernel;
  else if (rec.cat == "gpu_memcpy") kind = EventKind::kMemcpy;
  else if (rec.cat == "gpu_memset") kind = EventKind::kMemset;
  else {
    m.key = SkipKey(rec.ph, rec.cat);
    return m;
  }
  auto problem = [&](Problem key, std::string msg) {
    m.what = Disposition::kProblem;
    m.key = key;
    m.message = std::string(rec.cat) + " event '" + std::string(rec.name.substr(0, 80)) + "': " +
                std::move(msg);
    return m;
  };
  if (!rec.bad_field.empty())
    return problem(Problem::kKinetoBadField, "field '" + std::string(rec.bad_field) +
                                           "' has the wrong JSON type");
  const char* missing = rec.ts_text.empty()    ? "ts"
                        : rec.dur_text.empty() ? "dur"
                        : rec.name.data() == nullptr ? "name"
                                                     : nullptr;
  const bool device = IsDeviceKind(kind);
  if (!missing && !device && !((rec.pid_is_int || rec.pid_is_name) && (rec.tid_is_int || rec.tid_is_name)))
    missing = "pid/tid (numbers or strings)";
  if (!missing && device && !rec.device && !rec.pid_is_int) missing = "args.device";
  if (!missing && device && !rec.stream && !rec.tid_is_int) missing = "args.stream";
  if (missing) return problem(Problem::kKinetoMissingField, std::string("missing '") + missing + "'");
  std::optional<TimeNs> ts = ParseMicrosToNs(rec.ts_text);
  std::optional<TimeNs> dur = ParseMicrosToNs(rec.dur_text);
  if (!ts || !dur)
    return problem(Problem::kKinetoBadNumber,
                   "cannot convert ts/dur '" + std::string(rec.ts_text.substr(0, 40)) + "'/'" +
                       std::string(rec.dur_text.substr(0, 40)) + "' us to ns");
  if (*dur < 0)
    return problem(Problem::kKinetoNegativeDuration, "dur " + std::string(rec.dur_text) + " us < 0");
  Event& e = m.event;
  if (__builtin_add_overflow(*ts, *dur, &e.end))
    return problem(Problem::kKinetoBadNumber, "ts + dur overflows int64 ns");
  e.kind = kind;
  e.start = *ts;
  e.name = pool->Intern(rec.name);
  m.extra.category = pool->Intern(rec.cat);
  if (device) {
    m.extra.SetDevice(rec.device.value_or(rec.pid));
    m.extra.stream = static_cast<int32_t>(rec.stream.value_or(rec.tid));
    m.extra.bytes = rec.bytes.value_or(kNone);
    for (int i = 0; i < 3; ++i) m.extra.grid[i] = rec.grid[i], m.extra.block[i] = rec.block[i];
    if (kind == EventKind::kMemcpy) {
      std::string_view ck = CopyKindOf(rec.copy_kind, rec.name);
      if (!ck.empty()) m.extra.copy_kind = pool->Intern(ck);
    }
  } else {
    m.host = {rec.pid, rec.tid};
    if (IsApiKind(kind)) {
      m.extra.cbid = static_cast<int32_t>(rec.cbid.value_or(-1));
      m.extra.bytes = rec.bytes.value_or(kNone);  // memcpy/memset APIs (HIP traces carry it)
    }
  }
  m.what = Disposition::kEvent;
  return m;
}

}  // namespace truffld::merge::kineto
