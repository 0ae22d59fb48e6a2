// CUPTI adapter: see cupti_adapter.h. The only file that includes CUPTI headers.
#include "cupti_adapter.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>

#include <atomic>
#include <bitset>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "api_filter.h"
#include "tracer.h"

#ifndef TRUFFLD_CUPTI_BUILD_PATH
#define TRUFFLD_CUPTI_BUILD_PATH ""
#endif

namespace truffld::inject {
namespace {

// CUPTI entry points resolved with dlsym, so a process without libcupti still loads us.
struct CuptiApi {
  decltype(&cuptiGetResultString) GetResultString = nullptr;
  decltype(&cuptiGetVersion) GetVersion = nullptr;
  decltype(&cuptiSubscribe) Subscribe = nullptr;
  decltype(&cuptiEnableDomain) EnableDomain = nullptr;
  decltype(&cuptiEnableCallback) EnableCallback = nullptr;
  decltype(&cuptiGetCallbackName) GetCallbackName = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) RegisterCallbacks = nullptr;
  decltype(&cuptiActivityRegisterTimestampCallback) RegisterTimestampCallback = nullptr;
  decltype(&cuptiActivityEnable) ActivityEnable = nullptr;
  decltype(&cuptiActivityDisable) ActivityDisable = nullptr;
  decltype(&cuptiActivityFlushAll) FlushAll = nullptr;
  decltype(&cuptiActivityGetNextRecord) GetNextRecord = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) GetNumDroppedRecords = nullptr;
  decltype(&cuptiGetGraphId) GetGraphId = nullptr;
  decltype(&cuptiGetGraphNodeId) GetGraphNodeId = nullptr;
};

CuptiApi g_api;
Tracer* g_tracer = nullptr;

// The detail tier's API callbacks (api_filter.h), when they follow the device windows
// (TRUFFLD_CUPTI_API_SET=tiered with sampled windows): the subscriber and the ids, written once
// at start-up before the window switch is installed, then switched under the tracer's window
// lock. `is_detail` answers per callback id for the API stack (api_stack.h).
struct DetailTier {
  CUpti_SubscriberHandle sub = nullptr;
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> ids;
  static constexpr uint32_t kMaxId = 4096;
  std::bitset<kMaxId> is_detail[2];  // [0] runtime, [1] driver
  bool IsDetail(CUpti_CallbackDomain d, CUpti_CallbackId cbid) const {
    return cbid < kMaxId && is_detail[d == CUPTI_CB_DOMAIN_DRIVER_API][cbid];
  }
};
DetailTier g_detail;
// Whether the detail tier's callbacks are on now (always, without tiers).
std::atomic<bool> g_detail_on{true};
clockid_t g_clock = CLOCK_MONOTONIC_RAW;

std::string ResultText(CUptiResult r) {
  const char* s = nullptr;
  if (g_api.GetResultString) g_api.GetResultString(r, &s);
  return std::string(s ? s : "CUPTI error") + " (" + std::to_string(static_cast<int>(r)) + ")";
}

uint64_t CUPTIAPI TimestampNow() {
  timespec ts;
  clock_gettime(g_clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

const char* CopyKindName(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "DtoD";  // DtoD, AtoA, AtoD, DtoA and unknown
  }
}

const char* MemoryKindName(uint8_t k) {
  static const char* const kNames[] = {"unknown", "pageable", "pinned", "device", "array",
                                       "managed", "device_static", "managed_static"};
  return k < sizeof(kNames) / sizeof(kNames[0]) ? kNames[k] : "unknown";
}

const char* SyncKindName(uint32_t t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "event_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "stream_wait_event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "stream_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "context_synchronize";
    default: return "unknown";
  }
}

// Fills bytes / copy kind / stream of memcpy-, memset- and launch-like runtime calls.
void RuntimeArgs(CUpti_CallbackId cbid, const void* params, Record& r) {
  if (!params) return;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020: {
      const auto* p = static_cast<const cudaMemcpy_v3020_params*>(params);
      r.b = p->count; r.aux8 = static_cast<uint8_t>(1 + p->kind); break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020: {
      const auto* p = static_cast<const cudaMemcpyAsync_v3020_params*>(params);
      r.b = p->count; r.aux8 = static_cast<uint8_t>(1 + p->kind);
      r.c = reinterpret_cast<uintptr_t>(p->stream); break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
      r.b = static_cast<const cudaMemset_v3020_params*>(params)->count; break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020: {
      const auto* p = static_cast<const cudaMemsetAsync_v3020_params*>(params);
      r.b = p->count; r.c = reinterpret_cast<uintptr_t>(p->stream); break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
      r.c = reinterpret_cast<uintptr_t>(static_cast<const cudaLaunchKernel_v7000_params*>(params)->stream);
      break;
    default: break;
  }
}

// `t` is the calling thread's state (CurrentThread(), looked up once per callback).
void OnApi(ThreadState& t, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (cb->callbackSite == CUPTI_API_ENTER) {
    *cb->correlationData = ReadTicks();
    t.api.Enter(cb->correlationId, g_detail.IsDetail(domain, cbid), g_detail_on.load(std::memory_order_relaxed));
    const bool flush_point =
        (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020) ||
        (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
    if (flush_point) {
      if (g_api.FlushAll) g_api.FlushAll(0);
      g_tracer->RequestFlush();
    }
    return;
  }
  const int64_t end = static_cast<int64_t>(ReadTicks());
  if (!t.api.Exit(cb->correlationId)) {  // its enter was not seen: its start is unknown
    g_tracer->AddApiUnpaired();
    return;
  }
  Record r;
  std::memset(static_cast<void*>(&r), 0, sizeof(Record));
  r.kind = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? RecordKind::kRuntime : RecordKind::kDriver;
  r.t0 = static_cast<int64_t>(*cb->correlationData);
  r.t1 = end;
  r.id = cb->correlationId;
  r.a = cbid;
  r.name_ref = cb->functionName;
  if (cb->functionReturnValue) {
    r.flags |= kFlagHasReturnCode;
    r.return_code = *static_cast<const int*>(cb->functionReturnValue);
  }
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) RuntimeArgs(cbid, cb->functionParams, r);
  if (!r.name_ref) r.name_ref = "";
  g_tracer->Emit(t, r, nullptr, 0);
}

void OnGraphNode(CUpti_CallbackId cbid, const CUpti_ResourceData* rd) {
  const auto* gd = static_cast<const CUpti_GraphData*>(rd ? rd->resourceDescriptor : nullptr);
  if (!gd || !g_api.GetGraphId || !g_api.GetGraphNodeId) return;
  uint32_t gid = 0;
  uint64_t nid = 0;
  if (g_api.GetGraphId(gd->graph, &gid) != CUPTI_SUCCESS) return;
  if (g_api.GetGraphNodeId(gd->node, &nid) != CUPTI_SUCCESS) return;
  Record r;
  std::memset(static_cast<void*>(&r), 0, sizeof(Record));
  r.kind = RecordKind::kGraphNode;
  r.t0 = static_cast<int64_t>(ReadTicks());
  const ThreadState& t = t_thread;
  r.id = t.api.Outermost();  // the outermost (user-visible) API call
  r.a = gid;
  r.b = nid;
  uint64_t orig = 0;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED && gd->originalNode &&
      g_api.GetGraphNodeId(gd->originalNode, &orig) == CUPTI_SUCCESS) {
    r.c = orig;
    r.flags |= kFlagHasOriginal;
  }
  g_tracer->Emit(r, nullptr, 0);
}

void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  ThreadState& t = CurrentThread();
  if (t.is_tracer_thread || !data) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    OnApi(t, domain, cbid, static_cast<const CUpti_CallbackData*>(data));
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE &&
             (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED || cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)) {
    OnGraphNode(cbid, static_cast<const CUpti_ResourceData*>(data));
  }
}

void CUPTIAPI OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = g_tracer->activity_pool().Get();
  *size = *buffer ? g_tracer->activity_pool().buffer_bytes() : 0;
  *max_records = 0;
}

void CUPTIAPI OnBufferCompleted(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  size_t dropped = 0;
  if (g_api.GetNumDroppedRecords && g_api.GetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
    g_tracer->AddCuptiDropped(dropped);
  }
  if (buffer) g_tracer->EnqueueActivityBuffer(buffer, valid);
}

#include "cupti_decode.inc"

// The device activity kinds sampled device windows switch (synchronisation stays on).
constexpr CUpti_ActivityKind kDeviceKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                              CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

// Tracer::DeviceSwitch: called at window edges, never in the middle of a step. The detail
// tier's API callbacks follow the device activity: a launch outside a window has no kernel
// record to bind. The flag goes on before them and off after them, so that a thread entering a
// call meanwhile never takes a live entry for a stale one.
void SwitchDeviceActivity(bool on) {
  for (CUpti_ActivityKind k : kDeviceKinds) {
    if (on) g_api.ActivityEnable(k); else g_api.ActivityDisable(k);
  }
  if (g_detail.ids.empty()) return;
  if (on) g_detail_on.store(true, std::memory_order_relaxed);
  for (const auto& [domain, cbid] : g_detail.ids) g_api.EnableCallback(on ? 1 : 0, g_detail.sub, domain, cbid);
  if (!on) g_detail_on.store(false, std::memory_order_relaxed);
}

// Turns on API callbacks of `domain`: all of them, or the essential set (api_filter.h) one
// callback id at a time. With `tiered`, the detail tier's ids are kept in g_detail for the
// window switch. Without cuptiGetCallbackName the essential set cannot be chosen and the whole
// domain is enabled (noted in STATS' cupti_status).
void EnableApiDomain(CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain, bool all, bool tiered,
                     std::string* notes) {
  if (all || !g_api.GetCallbackName || !g_api.EnableCallback) {
    if (!all) *notes += "; cuptiGetCallbackName missing: every API call is recorded";
    g_api.EnableDomain(1, sub, domain);
    return;
  }
  const bool driver = domain == CUPTI_CB_DOMAIN_DRIVER_API;
  if (tiered) g_detail.sub = sub;
  // Ids past this header's count exist in newer CUPTIs; they are named, so they are judged too.
  const uint32_t limit = (driver ? static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_SIZE)
                                 : static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_SIZE)) + 512;
  for (uint32_t cbid = 1; cbid < limit; ++cbid) {
    const char* name = nullptr;
    if (g_api.GetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name) continue;
    const ApiTier tier = TierOf(driver, name);
    if (tier == ApiTier::kNone) continue;
    if (tier == ApiTier::kDetail && tiered && cbid < DetailTier::kMaxId) {  // known before it fires
      g_detail.ids.emplace_back(domain, cbid);
      g_detail.is_detail[driver][cbid] = true;
    }
    g_api.EnableCallback(1, sub, domain, cbid);
  }
}

// Loads libcupti (the configured path, else the usual names and the build's copy) and fills
// g_api from it. False with the reason when it cannot be loaded or lacks what tracing needs.
bool LoadCuptiApi(const std::string& configured, std::string* why) {
  void* h = nullptr;
  std::string tried;
  const char* candidates[] = {configured.c_str(), "libcupti.so.13", "libcupti.so", TRUFFLD_CUPTI_BUILD_PATH};
  for (const char* c : candidates) {
    if (!c || !*c) continue;
    if ((h = dlopen(c, RTLD_NOW | RTLD_LOCAL))) break;
    tried += std::string(tried.empty() ? "" : ", ") + c;
    if (!configured.empty()) break;  // an explicit choice is not second-guessed
  }
  if (!h) {
    *why = "cannot load libcupti; tried " + tried;
    return false;
  }
#define TRUFFLD_SYM(field, name) g_api.field = reinterpret_cast<decltype(g_api.field)>(dlsym(h, name))
  TRUFFLD_SYM(GetResultString, "cuptiGetResultString");
  TRUFFLD_SYM(GetVersion, "cuptiGetVersion");
  TRUFFLD_SYM(Subscribe, "cuptiSubscribe");
  TRUFFLD_SYM(EnableDomain, "cuptiEnableDomain");
  TRUFFLD_SYM(EnableCallback, "cuptiEnableCallback");
  TRUFFLD_SYM(GetCallbackName, "cuptiGetCallbackName");
  TRUFFLD_SYM(RegisterCallbacks, "cuptiActivityRegisterCallbacks");
  TRUFFLD_SYM(RegisterTimestampCallback, "cuptiActivityRegisterTimestampCallback");
  TRUFFLD_SYM(ActivityEnable, "cuptiActivityEnable");
  TRUFFLD_SYM(ActivityDisable, "cuptiActivityDisable");
  TRUFFLD_SYM(FlushAll, "cuptiActivityFlushAll");
  TRUFFLD_SYM(GetNextRecord, "cuptiActivityGetNextRecord");
  TRUFFLD_SYM(GetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords");
  TRUFFLD_SYM(GetGraphId, "cuptiGetGraphId");
  TRUFFLD_SYM(GetGraphNodeId, "cuptiGetGraphNodeId");
#undef TRUFFLD_SYM
  if (!g_api.Subscribe || !g_api.RegisterCallbacks || !g_api.ActivityEnable || !g_api.GetNextRecord ||
      !g_api.FlushAll) {
    *why = "libcupti lacks required functions";
    return false;
  }
  return true;
}

}  // namespace

bool StartCupti(Tracer* tracer) {
  g_tracer = tracer;
  g_clock = tracer->config().clock_realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC_RAW;
  auto fail = [&](const std::string& why) {
    Tracer::Log("CUPTI unavailable (" + why + "); CUDA activity is not traced, NVTX capture continues");
    tracer->SetCuptiStatus("unavailable: " + why);
    return false;
  };
  std::string why;
  if (!LoadCuptiApi(tracer->config().cupti_library, &why)) return fail(why);
  std::string notes;
  if (!g_api.RegisterTimestampCallback || g_api.RegisterTimestampCallback(&TimestampNow) != CUPTI_SUCCESS) {
    notes += "; GPU timestamps use CUPTI's own clock";
  }
  CUptiResult r = g_api.RegisterCallbacks(&OnBufferRequested, &OnBufferCompleted);
  if (r != CUPTI_SUCCESS) return fail("cuptiActivityRegisterCallbacks: " + ResultText(r));
  const WindowPlan& plan = tracer->config().device_windows;
  const bool sampled = plan.sampled() && g_api.ActivityDisable;
  if (plan.sampled() && !sampled) notes += "; no cuptiActivityDisable: device activity is recorded all the time";
  if (plan.mode != WindowPlan::Mode::kOff) {
    r = g_api.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) return fail("cuptiActivityEnable(CONCURRENT_KERNEL): " + ResultText(r));
    for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) {
      if ((r = g_api.ActivityEnable(k)) != CUPTI_SUCCESS) {
        notes += "; activity kind " + std::to_string(static_cast<int>(k)) + " off: " + ResultText(r);
      }
    }
  }
  if ((r = g_api.ActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)) != CUPTI_SUCCESS) {
    notes += "; activity kind " + std::to_string(static_cast<int>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)) +
             " off: " + ResultText(r);
  }
  // Sampled: device activity (and the detail tier's API callbacks, once enabled below) follow
  // the windows from then on, off until the first one opens.
  auto follow_windows = [&] {
    if (sampled) tracer->SetDeviceSwitch(&SwitchDeviceActivity);
  };
  // Never destroyed: the tracer's atexit handler uses it after static destructors may have run.
  static auto* source = new CuptiActivitySource;
  tracer->SetActivitySource(source);
  CUpti_SubscriberHandle sub = nullptr;
  r = g_api.Subscribe(&sub, &OnCallback, nullptr);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    Tracer::Log("another CUPTI subscriber is active (a profiler?): API callbacks and GRAPH_NODE records are off, device activity and NVTX continue");
    tracer->SetCuptiStatus("activity only: another subscriber is active" + notes);
    follow_windows();
    return true;
  }
  if (r != CUPTI_SUCCESS) {
    Tracer::Log("cuptiSubscribe failed (" + ResultText(r) + "): API callbacks are off, device activity and NVTX continue");
    tracer->SetCuptiStatus("activity only: cuptiSubscribe " + ResultText(r) + notes);
    follow_windows();
    return true;
  }
  const Config& cfg = tracer->config();
  const bool all = cfg.api_set == Config::ApiSet::kAll;
  const bool tiered = cfg.api_set == Config::ApiSet::kTiered && sampled;
  if (cfg.trace_runtime) EnableApiDomain(sub, CUPTI_CB_DOMAIN_RUNTIME_API, all, tiered, &notes);
  if (cfg.trace_driver) EnableApiDomain(sub, CUPTI_CB_DOMAIN_DRIVER_API, all, tiered, &notes);
  if (!g_detail.ids.empty()) notes += "; per-operator API calls inside device windows only";
  g_api.EnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
  g_api.EnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
  follow_windows();
  tracer->SetCuptiStatus("ok" + notes);
  return true;
}

}  // namespace truffld::inject
