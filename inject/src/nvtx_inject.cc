// NVTX injection adapter (core and core2 modules): see nvtx_inject.h.
#define NVTX_NO_IMPL
#include "nvtx_inject.h"

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <atomic>
#include <cstring>
#include <cwchar>
#include <string>
#include <string_view>

#include "range_balance.h"
#include "tracer.h"

namespace truffld::inject {

namespace {

Tracer* g_tracer = nullptr;  // set once by AttachNvtx before any handler can run
bool g_sampling = false;     // sampled device windows: step ranges move the window edges
// The handle of NVTX domain "truffld.comm" (the hooks' collective ranges) once created; its
// pushes feed the slow-collective trigger while sampling.
std::atomic<const void*> g_comm_domain{nullptr};
constexpr std::string_view kCommDomain = "truffld.comm";
std::atomic<uint64_t> g_next_range_id{1};

// Encodes a wide string as UTF-8 into `out` (at most cap bytes). Returns the length.
size_t WideToUtf8(const wchar_t* w, char* out, size_t cap) {
  size_t n = 0;
  for (; w && *w; ++w) {
    uint32_t c = static_cast<uint32_t>(*w);
    char tmp[4];
    size_t k;
    if (c < 0x80) { tmp[0] = static_cast<char>(c); k = 1; }
    else if (c < 0x800) { tmp[0] = static_cast<char>(0xC0 | (c >> 6)); tmp[1] = static_cast<char>(0x80 | (c & 0x3F)); k = 2; }
    else if (c < 0x10000) { tmp[0] = static_cast<char>(0xE0 | (c >> 12)); tmp[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F)); tmp[2] = static_cast<char>(0x80 | (c & 0x3F)); k = 3; }
    else { tmp[0] = static_cast<char>(0xF0 | (c >> 18)); tmp[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F)); tmp[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F)); tmp[3] = static_cast<char>(0x80 | (c & 0x3F)); k = 4; }
    if (n + k > cap) break;
    std::memcpy(out + n, tmp, k);
    n += k;
  }
  return n;
}

inline void InitRecord(Record& r, RecordKind kind, const void* domain, uint64_t id) {
  r.kind = kind;
  r.flags = 0;
  r.aux8 = 0;
  r.payload_kind = PayloadKind::kNone;
  r.t0 = static_cast<int64_t>(ReadTicks());
  r.t1 = 0;
  r.id = id;
  r.a = r.b = r.c = 0;
  r.domain = domain;
  r.name_ref = nullptr;
  r.category = 0;
  r.color = 0;
  r.return_code = 0;
  r.name_len = 0;
  r.payload_len = 0;
  r.payload_value = 0;
}

// Writes a record of any NVTX kind with its copied data (name, then payload bytes), through
// range_balance.h for the kinds that open or close ranges, and keeps the thread's push/pop
// depth. Returns what the NVTX call returns: the range id for a start, the nesting level for a
// push and a pop (-1 for a pop without a push), 0 otherwise.
uint64_t Dispatch(Record& r, const char* name, size_t len, const char* payload, size_t payload_len) {
  r.name_len = static_cast<uint16_t>(len);
  r.payload_len = static_cast<uint16_t>(payload_len);
  ThreadState& t = CurrentThread();  // one TLS lookup per NVTX call
  switch (r.kind) {
    case RecordKind::kNvtxPush:
      if (g_sampling && !t.step_from) {
        const std::string_view n = r.name_ref ? std::string_view(r.name_ref) : std::string_view(name, len);
        if (g_tracer->IsStepName(n)) {
          g_tracer->StepBegin(t, n);  // may open a device window
          r.t0 = static_cast<int64_t>(ReadTicks());  // the step starts once its window is open
          t.step_from = t.nvtx_depth + 1;
        }
      }
      if (g_sampling && !t.comm_from && r.domain && r.domain == g_comm_domain.load(std::memory_order_relaxed)) {
        g_tracer->CollectiveBegin(t, r.name_ref ? std::string_view(r.name_ref) : std::string_view(name, len));
        t.comm_from = t.nvtx_depth + 1;
      }
      OpenNested(*g_tracer, t, r, t.nvtx_depth, name, len, payload, payload_len);
      return static_cast<uint64_t>(t.nvtx_depth++);
    case RecordKind::kNvtxPop: {
      const int32_t level = t.nvtx_depth - 1;
      CloseNested(*g_tracer, t, r, level, payload, payload_len);
      if (t.comm_from && level == t.comm_from - 1) {
        t.comm_from = 0;
        g_tracer->CollectiveEnd(t);  // a slow one requests a window at the next step
      }
      if (t.step_from && level == t.step_from - 1) {
        t.step_from = 0;
        g_tracer->StepEnd(t);  // after the pop's timestamp: may close the window
      }
      return static_cast<uint64_t>(t.nvtx_depth > 0 ? --t.nvtx_depth : -1);
    }
    case RecordKind::kNvtxStart:
      return OpenStart(*g_tracer, r, r.id, name, len, payload, payload_len);
    case RecordKind::kNvtxEnd:
      CloseStart(*g_tracer, r, r.id, payload, payload_len);
      return 0;
    default:
      g_tracer->Emit(r, name, len, payload, payload_len);
      return 0;
  }
}

// Emits a record whose name is `name` (may be null) and, optionally, schema payload bytes.
inline uint64_t EmitNamed(Record& r, const char* name, size_t len, const void* payload = nullptr,
                          size_t payload_len = 0) {
  if (len > kMaxNameBytes) {
    len = kMaxNameBytes;
    r.flags |= kFlagNameTruncated;
    g_tracer->CountNameTruncated();
  }
  return Dispatch(r, name, len, static_cast<const char*>(payload), payload_len);
}

// Takes the first of `count` payload-extension payloads into `r` (kind and schema id) and returns
// its bytes; empty when there is none, or when it exceeds kMaxPayloadBytes (counted). Both ways
// of passing one go through here: an event attribute of payloadType NVTX_PAYLOAD_TYPE_EXT and
// the extension's own events (nvtxRangePopPayload & co.).
std::string_view TakeSchemaPayload(Record& r, const nvtxPayloadData_t* pd, size_t count) {
  if (!pd || count < 1 || !pd->payload) return {};
  if (pd->size > kMaxPayloadBytes) {
    g_tracer->CountPayloadTooLarge();
    return {};
  }
  r.payload_kind = PayloadKind::kSchema;
  r.payload_value = pd->schemaId;
  return {static_cast<const char*>(pd->payload), pd->size};
}

// Builds and emits a record from NVTX event attributes; returns EmitNamed's id.
uint64_t EmitAttr(RecordKind kind, const void* domain, const nvtxEventAttributes_t* a, uint64_t id) {
  Record r;
  InitRecord(r, kind, domain, id);
  if (!a) return EmitNamed(r, "", 0);
  if (a->category) { r.flags |= kFlagHasCategory; r.category = a->category; }
  if (a->colorType == NVTX_COLOR_ARGB) { r.flags |= kFlagHasColor; r.color = a->color; }
  const void* payload = nullptr;
  size_t payload_len = 0;
  switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: r.payload_kind = PayloadKind::kUint64; r.payload_value = a->payload.ullValue; break;
    case NVTX_PAYLOAD_TYPE_INT64: r.payload_kind = PayloadKind::kInt64; r.payload_value = static_cast<uint64_t>(a->payload.llValue); break;
    case NVTX_PAYLOAD_TYPE_DOUBLE: r.payload_kind = PayloadKind::kDouble; std::memcpy(&r.payload_value, &a->payload.dValue, 8); break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: r.payload_kind = PayloadKind::kUint32; r.payload_value = a->payload.uiValue; break;
    case NVTX_PAYLOAD_TYPE_INT32: r.payload_kind = PayloadKind::kInt32; r.payload_value = static_cast<uint32_t>(a->payload.iValue); break;
    case NVTX_PAYLOAD_TYPE_FLOAT: { r.payload_kind = PayloadKind::kFloat; uint32_t u; std::memcpy(&u, &a->payload.fValue, 4); r.payload_value = u; break; }
    case NVTX_PAYLOAD_TYPE_EXT: {
      const auto* pd = reinterpret_cast<const nvtxPayloadData_t*>(static_cast<uintptr_t>(a->payload.ullValue));
      const std::string_view bytes =
          TakeSchemaPayload(r, pd, a->reserved0 >= 1 ? static_cast<size_t>(a->reserved0) : 0);
      payload = bytes.data();
      payload_len = bytes.size();
      break;
    }
    default: break;
  }
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return EmitNamed(r, a->message.ascii, a->message.ascii ? std::strlen(a->message.ascii) : 0,
                       payload, payload_len);
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      const auto* s = reinterpret_cast<const NvtxString*>(a->message.registered);
      if (s) r.name_ref = s->text.c_str();
      return EmitNamed(r, nullptr, 0, payload, payload_len);
    }
    case NVTX_MESSAGE_TYPE_UNICODE: {
      char buf[kMaxWideNameBytes];
      const size_t n = WideToUtf8(a->message.unicode, buf, sizeof buf);
      return EmitNamed(r, buf, n, payload, payload_len);
    }
    default:
      return EmitNamed(r, "", 0, payload, payload_len);
  }
}

uint64_t EmitAscii(RecordKind kind, const char* msg, uint64_t id) {
  Record r;
  InitRecord(r, kind, nullptr, id);
  return EmitNamed(r, msg ? msg : "", msg ? std::strlen(msg) : 0);
}

uint64_t EmitWide(RecordKind kind, const wchar_t* msg, uint64_t id) {
  Record r;
  InitRecord(r, kind, nullptr, id);
  char buf[kMaxWideNameBytes];
  return EmitNamed(r, buf, WideToUtf8(msg, buf, sizeof buf));
}

uint64_t EmitBare(RecordKind kind, const void* domain, uint64_t id) {
  Record r;
  InitRecord(r, kind, domain, id);
  return Dispatch(r, nullptr, 0, nullptr, 0);
}

// Push and pop calls return the nesting level Dispatch computed.
int Level(uint64_t v) { return static_cast<int>(static_cast<int64_t>(v)); }
uint64_t NewRangeId() { return g_next_range_id.fetch_add(1, std::memory_order_relaxed); }

// An event of the payload extension: no message, the first of `count` payloads (the others are
// not recorded; NCCL and the NVTX helpers pass one).
uint64_t EmitPayloadData(RecordKind kind, const void* domain, const nvtxPayloadData_t* pd,
                         size_t count, uint64_t id) {
  Record r;
  InitRecord(r, kind, domain, id);
  const std::string_view bytes = TakeSchemaPayload(r, pd, count);
  return EmitNamed(r, nullptr, 0, bytes.data(), bytes.size());
}

// ---- payload extension events (slots set by AttachNvtxPayloadExtension) ----
void NVTX_API MarkPayload(nvtxDomainHandle_t d, const nvtxPayloadData_t* p, size_t n) {
  EmitPayloadData(RecordKind::kNvtxMark, d, p, n, 0);
}
int NVTX_API RangePushPayload(nvtxDomainHandle_t d, const nvtxPayloadData_t* p, size_t n) {
  return Level(EmitPayloadData(RecordKind::kNvtxPush, d, p, n, 0));
}
// NCCL pushes with nvtxDomainRangePushEx and closes with this, passing parameters it only knows
// at the end (communicator hash, ranks): the POP carries them and truffld-merge joins them to
// the range.
int NVTX_API RangePopPayload(nvtxDomainHandle_t d, const nvtxPayloadData_t* p, size_t n) {
  return Level(EmitPayloadData(RecordKind::kNvtxPop, d, p, n, 0));
}
nvtxRangeId_t NVTX_API RangeStartPayload(nvtxDomainHandle_t d, const nvtxPayloadData_t* p, size_t n) {
  return EmitPayloadData(RecordKind::kNvtxStart, d, p, n, NewRangeId());
}
void NVTX_API RangeEndPayload(nvtxDomainHandle_t d, nvtxRangeId_t id, const nvtxPayloadData_t* p, size_t n) {
  EmitPayloadData(RecordKind::kNvtxEnd, d, p, n, id);
}

// ---- CORE module ----
void NVTX_API MarkEx(const nvtxEventAttributes_t* a) { EmitAttr(RecordKind::kNvtxMark, nullptr, a, 0); }
void NVTX_API MarkA(const char* m) { EmitAscii(RecordKind::kNvtxMark, m, 0); }
void NVTX_API MarkW(const wchar_t* m) { EmitWide(RecordKind::kNvtxMark, m, 0); }
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) { return EmitAttr(RecordKind::kNvtxStart, nullptr, a, NewRangeId()); }
nvtxRangeId_t NVTX_API RangeStartA(const char* m) { return EmitAscii(RecordKind::kNvtxStart, m, NewRangeId()); }
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* m) { return EmitWide(RecordKind::kNvtxStart, m, NewRangeId()); }
void NVTX_API RangeEnd(nvtxRangeId_t id) { EmitBare(RecordKind::kNvtxEnd, nullptr, id); }
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) { return Level(EmitAttr(RecordKind::kNvtxPush, nullptr, a, 0)); }
// nvtxRangePushA and nvtxRangePop, the calls PyTorch's emit_nvtx makes per operator: without
// sampled windows (no step or collective to watch), on a thread with a ring, no dropped range
// open and a depth with reservations, one compact record goes straight into the ring (no Record
// built, as Dispatch would write it). Anything else, and a full ring, takes the general path,
// which counts what it drops.
bool FastNvtx(const ThreadState& t, int32_t level) {
  return !g_sampling && t.ring && !t.drop_from && level >= 0 && level < kMaxReservedDepth;
}
int NVTX_API RangePushA(const char* m) {
  const auto ticks = static_cast<int64_t>(ReadTicks());
  const size_t len = m ? std::strlen(m) : 0;
  ThreadState& t = CurrentThread();
  if (__builtin_expect(FastNvtx(t, t.nvtx_depth) && len <= kMaxNameBytes, 1)) {
    if (g_tracer->EmitCompact(t, RecordKind::kNvtxPush, ticks, m, len, Reserve::kOpen)) return t.nvtx_depth++;
  }
  return Level(EmitAscii(RecordKind::kNvtxPush, m, 0));
}
int NVTX_API RangePushW(const wchar_t* m) { return Level(EmitWide(RecordKind::kNvtxPush, m, 0)); }
int NVTX_API RangePop() {
  const auto ticks = static_cast<int64_t>(ReadTicks());
  ThreadState& t = CurrentThread();
  if (__builtin_expect(FastNvtx(t, t.nvtx_depth - 1), 1)) {
    if (g_tracer->EmitCompact(t, RecordKind::kNvtxPop, ticks, nullptr, 0, Reserve::kClose)) return --t.nvtx_depth;
  }
  return Level(EmitBare(RecordKind::kNvtxPop, nullptr, 0));
}
void NVTX_API NameCategoryA(uint32_t cat, const char* name) { if (name) g_tracer->nvtx().NameCategory(nullptr, cat, name); }
void NVTX_API NameCategoryW(uint32_t cat, const wchar_t* name) {
  char buf[512];
  g_tracer->nvtx().NameCategory(nullptr, cat, std::string(buf, WideToUtf8(name, buf, sizeof buf)));
}
void NVTX_API NameOsThreadA(uint32_t, const char*) {}
void NVTX_API NameOsThreadW(uint32_t, const wchar_t*) {}

// ---- CORE2 module (domains) ----
void NVTX_API DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { EmitAttr(RecordKind::kNvtxMark, d, a, 0); }
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { return EmitAttr(RecordKind::kNvtxStart, d, a, NewRangeId()); }
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id) { EmitBare(RecordKind::kNvtxEnd, d, id); }
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { return Level(EmitAttr(RecordKind::kNvtxPush, d, a, 0)); }
int NVTX_API DomainRangePop(nvtxDomainHandle_t d) { return Level(EmitBare(RecordKind::kNvtxPop, d, 0)); }
char g_resource_token;
nvtxResourceHandle_t NVTX_API DomainResourceCreate(nvtxDomainHandle_t, nvtxResourceAttributes_t*) { return reinterpret_cast<nvtxResourceHandle_t>(&g_resource_token); }
void NVTX_API DomainResourceDestroy(nvtxResourceHandle_t) {}
void NVTX_API DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t cat, const char* name) { if (name) g_tracer->nvtx().NameCategory(d, cat, name); }
void NVTX_API DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t cat, const wchar_t* name) {
  char buf[512];
  g_tracer->nvtx().NameCategory(d, cat, std::string(buf, WideToUtf8(name, buf, sizeof buf)));
}
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(g_tracer->nvtx().RegisterString(s ? s : ""));
}
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) {
  char buf[kMaxWideNameBytes];
  return reinterpret_cast<nvtxStringHandle_t>(
      g_tracer->nvtx().RegisterString(std::string(buf, WideToUtf8(s, buf, sizeof buf))));
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  const std::string_view n = name ? name : "";
  void* d = g_tracer->nvtx().CreateDomain(n);
  if (n == kCommDomain) g_comm_domain.store(d, std::memory_order_relaxed);
  return reinterpret_cast<nvtxDomainHandle_t>(d);
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) {
  char buf[512];
  return reinterpret_cast<nvtxDomainHandle_t>(
      g_tracer->nvtx().CreateDomain(std::string(buf, WideToUtf8(name, buf, sizeof buf))));
}
void NVTX_API DomainDestroy(nvtxDomainHandle_t) {}  // handles stay valid: records refer to them
void NVTX_API Initialize(const void*) {}

template <class F>
bool Install(NvtxFunctionTable table, unsigned size, unsigned cbid, F fn) {
  if (!table || cbid >= size || !table[cbid]) return false;
  *table[cbid] = reinterpret_cast<NvtxFunctionPointer>(fn);
  return true;
}

}  // namespace

void FillNvtxPayloadEventSlots(intptr_t* slots, size_t slot_count) {
  auto set = [&](size_t slot, auto fn) {
    if (slot < slot_count) slots[slot] = reinterpret_cast<intptr_t>(fn);
  };
  set(NVTX3EXT_CBID_nvtxMarkPayload, MarkPayload);
  set(NVTX3EXT_CBID_nvtxRangePushPayload, RangePushPayload);
  set(NVTX3EXT_CBID_nvtxRangePopPayload, RangePopPayload);
  set(NVTX3EXT_CBID_nvtxRangeStartPayload, RangeStartPayload);
  set(NVTX3EXT_CBID_nvtxRangeEndPayload, RangeEndPayload);
}

int AttachNvtx(Tracer* tracer, const void* (*get_export_table)(uint32_t)) {
  if (!tracer || !get_export_table) return 0;
  g_tracer = tracer;
  g_sampling = tracer->sampling();
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!cb || cb->struct_size < sizeof(NvtxExportTableCallbacks) || !cb->GetModuleFunctionTable) {
    Tracer::Log("NVTX export table has no callback table; NVTX events are not captured");
    return 0;
  }
  NvtxFunctionTable t = nullptr;
  unsigned n = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n)) return 0;
  Install(t, n, NVTX_CBID_CORE_MarkEx, MarkEx);
  Install(t, n, NVTX_CBID_CORE_MarkA, MarkA);
  Install(t, n, NVTX_CBID_CORE_MarkW, MarkW);
  Install(t, n, NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
  Install(t, n, NVTX_CBID_CORE_RangeStartA, RangeStartA);
  Install(t, n, NVTX_CBID_CORE_RangeStartW, RangeStartW);
  Install(t, n, NVTX_CBID_CORE_RangeEnd, RangeEnd);
  Install(t, n, NVTX_CBID_CORE_RangePushEx, RangePushEx);
  Install(t, n, NVTX_CBID_CORE_RangePushA, RangePushA);
  Install(t, n, NVTX_CBID_CORE_RangePushW, RangePushW);
  Install(t, n, NVTX_CBID_CORE_RangePop, RangePop);
  Install(t, n, NVTX_CBID_CORE_NameCategoryA, NameCategoryA);
  Install(t, n, NVTX_CBID_CORE_NameCategoryW, NameCategoryW);
  Install(t, n, NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA);
  Install(t, n, NVTX_CBID_CORE_NameOsThreadW, NameOsThreadW);
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n)) {
    Install(t, n, NVTX_CBID_CORE2_DomainMarkEx, DomainMarkEx);
    Install(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
    Install(t, n, NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
    Install(t, n, NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
    Install(t, n, NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
    Install(t, n, NVTX_CBID_CORE2_DomainResourceCreate, DomainResourceCreate);
    Install(t, n, NVTX_CBID_CORE2_DomainResourceDestroy, DomainResourceDestroy);
    Install(t, n, NVTX_CBID_CORE2_DomainNameCategoryA, DomainNameCategoryA);
    Install(t, n, NVTX_CBID_CORE2_DomainNameCategoryW, DomainNameCategoryW);
    Install(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
    Install(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
    Install(t, n, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
    Install(t, n, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
    Install(t, n, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
    Install(t, n, NVTX_CBID_CORE2_Initialize, Initialize);
  }
  const auto* vi = static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO));
  if (vi && vi->struct_size >= sizeof(NvtxExportTableVersionInfo) && vi->SetInjectionNvtxVersion) {
    vi->SetInjectionNvtxVersion(NVTX_VERSION);
  }
  return 1;
}

}  // namespace truffld::inject
