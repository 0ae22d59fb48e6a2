// libtruffld_cupti_double.so: a test-only stand-in for libcupti.
//
// It exports the CUPTI functions libcupti_injector.so resolves (TRUFFLD_CUPTI_LIBRARY points the
// injector here) and replays a recorded CUDA session through them: API enter/exit callbacks with
// real CUPTI callback-data structs, graph-node creation and cloning resource callbacks, and
// activity buffers filled with real CUPTI activity records (kernels, graph-launched kernels with
// graph node ids, memcpy, memset, synchronization), plus a dropped-record count. Scenarios
// (truffld_double_play's argument) also simulate a subscriber conflict and an initialisation
// failure. The expected contents of the resulting dump are described in cupti_replay_test.cc.
// Thread-safety: the replay is driven from one thread; FlushAll may be called from another.
#include <cupti.h>

#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace {

std::string g_scenario = "normal";
CUpti_CallbackFunc g_callback = nullptr;
void* g_userdata = nullptr;
bool g_subscribed = false;
CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
CUpti_TimestampCallbackFunc g_timestamp = nullptr;
size_t g_pending_dropped = 0;
std::mutex g_mu;
uint8_t* g_buffer = nullptr;
size_t g_buffer_size = 0;
size_t g_buffer_used = 0;

uint64_t Now() {
  if (g_timestamp) return g_timestamp();
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

size_t RecordSize(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    default: return 0;
  }
}
size_t Align8(size_t n) { return (n + 7) & ~size_t{7}; }

// Appends one activity record to the current buffer (requesting one from the injector first).
template <class T>
void Append(const T& rec) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_buffer) {
    size_t max_records = 0;
    g_request(&g_buffer, &g_buffer_size, &max_records);
    g_buffer_used = 0;
    if (!g_buffer) { ++g_pending_dropped; return; }
  }
  const size_t need = Align8(sizeof(T));
  if (g_buffer_used + need > g_buffer_size) { ++g_pending_dropped; return; }
  std::memcpy(g_buffer + g_buffer_used, &rec, sizeof(T));
  g_buffer_used += need;
}

void CompleteBuffer() {
  uint8_t* b;
  size_t size, used;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    b = g_buffer; size = g_buffer_size; used = g_buffer_used;
    g_buffer = nullptr;
  }
  if (b && g_complete) g_complete(nullptr, 0, b, size, used);
}

// Which API callbacks the injector turned on, as CUPTI keeps it: whole domains
// (cuptiEnableDomain) and single callback ids (cuptiEnableCallback). Callbacks that are off are
// not delivered, as with the real CUPTI.
std::set<std::pair<int, uint32_t>> g_enabled_ids;
std::set<int> g_enabled_domains;
bool Enabled(CUpti_CallbackDomain d, CUpti_CallbackId cbid) {
  return g_enabled_domains.count(d) || g_enabled_ids.count({d, cbid});
}

// Names for cuptiGetCallbackName, spelled as CUPTI spells them (version suffixes included),
// for the ids the scenarios use.
const char* CallbackName(CUpti_CallbackDomain d, CUpti_CallbackId cbid) {
  if (d == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020: return "cudaMemcpy_v3020";
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000: return "cudaLaunchKernel_v7000";
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000: return "cudaGraphInstantiate_v10000";
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000: return "cudaGraphLaunch_v10000";
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020: return "cudaMemsetAsync_v3020";
      case CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020: return "cudaGetDevice_v3020";
      case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020: return "cudaDeviceReset_v3020";
      default: return nullptr;
    }
  }
  if (d == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel: return "cuLaunchKernel";
      case CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent: return "cuCtxGetCurrent";
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: return "cuLaunchKernelEx";
      case CUPTI_DRIVER_TRACE_CBID_cuProfilerStop: return "cuProfilerStop";
      default: return nullptr;
    }
  }
  return nullptr;
}

// One API call: enter callback, `inside` (nested calls / resource callbacks), exit callback.
template <class Inside>
void Api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char* name, uint32_t corr,
         const void* params, Inside inside) {
  uint64_t slot = 0;
  int ret = 0;
  CUpti_CallbackData cb{};
  cb.functionName = name;
  cb.functionParams = params;
  cb.functionReturnValue = &ret;
  cb.correlationId = corr;
  cb.correlationData = &slot;
  const bool on = g_subscribed && g_callback && Enabled(domain, cbid);
  cb.callbackSite = CUPTI_API_ENTER;
  if (on) g_callback(g_userdata, domain, cbid, &cb);
  inside();
  cb.callbackSite = CUPTI_API_EXIT;
  if (on) g_callback(g_userdata, domain, cbid, &cb);
}
void Api(CUpti_CallbackDomain d, CUpti_CallbackId cbid, const char* name, uint32_t corr, const void* params) {
  Api(d, cbid, name, corr, params, [] {});
}

CUgraph FakeGraph(uintptr_t id) { return reinterpret_cast<CUgraph>(id); }
CUgraphNode FakeNode(uintptr_t id) { return reinterpret_cast<CUgraphNode>(id); }

void GraphNode(CUpti_CallbackId cbid, uintptr_t graph, uintptr_t node, uintptr_t original) {
  if (!g_subscribed || !g_callback) return;
  CUpti_GraphData gd{};
  gd.graph = FakeGraph(graph);
  gd.node = FakeNode(node);
  gd.originalNode = original ? FakeNode(original) : nullptr;
  CUpti_ResourceData rd{};
  rd.resourceDescriptor = &gd;
  g_callback(g_userdata, CUPTI_CB_DOMAIN_RESOURCE, cbid, &rd);
}

CUpti_ActivityKernel10 Kernel(const char* name, uint32_t corr, uint32_t stream, uint32_t graph, uint64_t node) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = name;
  k.start = Now();
  k.end = k.start + 5000;
  k.correlationId = corr;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = stream;
  k.gridX = 128; k.gridY = 1; k.gridZ = 1;
  k.blockX = 256; k.blockY = 1; k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 2048;
  k.graphId = graph;
  k.graphNodeId = node;
  return k;
}

void PlayNormal() {
  using RT = CUpti_CallbackDomain;
  const RT rt = CUPTI_CB_DOMAIN_RUNTIME_API, drv = CUPTI_CB_DOMAIN_DRIVER_API;
  char host[64], dev[64];
  cudaMemcpy_v3020_params mp{dev, host, 4096, cudaMemcpyHostToDevice};
  Api(rt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy", 1, &mp);
  cudaLaunchKernel_v7000_params lp{};
  lp.stream = reinterpret_cast<cudaStream_t>(0x10);
  Api(rt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", 2, &lp, [] {
    Api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", 3, nullptr);
  });
  // Stream capture: two kernels become nodes 100, 101 of graph 7.
  Api(rt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", 4, &lp, [] {
    GraphNode(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 7, 100, 0);
  });
  Api(rt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", 5, &lp, [] {
    GraphNode(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, 7, 101, 0);
  });
  // Instantiation clones them into graph 8 as nodes 200, 201.
  Api(rt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000, "cudaGraphInstantiate", 6, nullptr, [] {
    GraphNode(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, 8, 200, 100);
    GraphNode(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, 8, 201, 101);
  });
  Api(rt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch", 7, nullptr);
  cudaMemsetAsync_v3020_params sp{dev, 0, 512, reinterpret_cast<cudaStream_t>(0x10)};
  Api(rt, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, "cudaMemsetAsync", 9, &sp);
  // Calls outside the essential set (a query, a driver call that does no work), then a kernel
  // launched straight through the driver (as Triton does), which is in it.
  Api(rt, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice", 21, nullptr, [] {
    Api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, "cuCtxGetCurrent", 21, nullptr);
  });
  Api(drv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cuLaunchKernelEx", 22, nullptr);
}

void PlayActivity() {
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 4096;
  m.start = Now();
  m.end = m.start + 1000;
  m.correlationId = 1;
  m.contextId = 1;
  m.streamId = 7;
  Append(m);
  Append(Kernel("vecAdd(float*, float*)", 2, 16, 0, 0));
  Append(Kernel("gemm_graph_a", 7, 16, 8, 200));
  Append(Kernel("gemm_graph_b", 7, 16, 8, 201));
  CUpti_ActivityMemset4 s{};
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 512;
  s.start = Now();
  s.end = s.start + 300;
  s.correlationId = 9;
  s.contextId = 1;
  s.streamId = 16;
  Append(s);
  CUpti_ActivitySynchronization2 y{};
  y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  y.start = Now();
  y.end = y.start + 20000;
  y.correlationId = 10;
  y.contextId = 1;
  y.streamId = 16;
  Append(y);
  g_pending_dropped += 5;  // as if CUPTI had lost five records
}

}  // namespace

extern "C" {

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  switch (result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_NOT_INITIALIZED: *str = "CUPTI_ERROR_NOT_INITIALIZED"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
    default: *str = "CUPTI_ERROR_UNKNOWN";
  }
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* v) { *v = CUPTI_API_VERSION; return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* sub, CUpti_CallbackFunc cb, void* ud) {
  if (g_scenario == "multiple_subscribers") return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  g_callback = cb;
  g_userdata = ud;
  g_subscribed = true;
  *sub = reinterpret_cast<CUpti_SubscriberHandle>(&g_callback);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t on, CUpti_SubscriberHandle, CUpti_CallbackDomain d) {
  if (on) g_enabled_domains.insert(d); else g_enabled_domains.erase(d);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle, CUpti_CallbackDomain d, CUpti_CallbackId cbid) {
  if (on) g_enabled_ids.insert({d, cbid}); else g_enabled_ids.erase({d, cbid});
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t cbid, const char** name) {
  if (!name) return CUPTI_ERROR_INVALID_PARAMETER;
  *name = CallbackName(d, cbid);
  return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done) {
  g_request = req;
  g_complete = done;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) { g_timestamp = f; return CUPTI_SUCCESS; }
// Activity kinds on, as CUPTI keeps them; the "windows" driver records only what is on.
std::set<int> g_activity_on;
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind k) {
  if (g_scenario == "init_failure") return CUPTI_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mu);
  g_activity_on.insert(k);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind k) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_activity_on.erase(k);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) { CompleteBuffer(); return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  size_t off = 0;
  if (*record) {
    const size_t size = RecordSize((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    off = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) + Align8(size);
  }
  if (off >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + off);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  *dropped = g_pending_dropped;
  g_pending_dropped = 0;
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetGraphId(CUgraph graph, uint32_t* id) { *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(graph)); return CUPTI_SUCCESS; }
CUptiResult CUPTIAPI cuptiGetGraphNodeId(CUgraphNode node, uint64_t* id) { *id = reinterpret_cast<uintptr_t>(node); return CUPTI_SUCCESS; }

// Test driver: replays `scenario` ("normal", "multiple_subscribers", "init_failure").
__attribute__((visibility("default"))) int truffld_double_play(const char* scenario) {
  g_scenario = scenario ? scenario : "normal";
  if (g_scenario == "normal") PlayNormal();
  if (g_request) PlayActivity();
  // cudaDeviceReset: the injector flushes CUPTI on entry (completes our buffer).
  Api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, "cudaDeviceReset", 11, nullptr);
  return 0;
}

// Flush-point driver: the normal session without its closing cudaDeviceReset, so the activity
// stays in the double's pending buffer until the injector flushes CUPTI.
__attribute__((visibility("default"))) int truffld_double_play_open(const char* scenario) {
  g_scenario = scenario ? scenario : "normal";
  if (g_scenario == "normal") PlayNormal();
  if (g_request) PlayActivity();
  return 0;
}

// Fires one flush point: "reset" (runtime cudaDeviceReset) or "profiler_stop" (driver cuProfilerStop).
__attribute__((visibility("default"))) void truffld_double_fire_flush_point(const char* which) {
  if (std::string(which) == "profiler_stop")
    Api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, "cuProfilerStop", 12, nullptr);
  else
    Api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020, "cudaDeviceReset", 11, nullptr);
}

// Benchmark driver: n enter/exit pairs of cudaLaunchKernel through the subscriber callback.
__attribute__((visibility("default"))) void truffld_double_fire_api(long n) {
  cudaLaunchKernel_v7000_params lp{};
  for (long i = 0; i < n; ++i) {
    Api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel",
        static_cast<uint32_t>(1000 + i), &lp);
  }
}

// Sampled-window driver: one cudaLaunchKernel (correlation id `corr`) whose kernel activity is
// recorded when kernel activity is on at launch, as CUPTI does; `copy` makes it a cudaMemcpy
// with MEMCPY activity instead.
__attribute__((visibility("default"))) void truffld_double_launch(unsigned corr, int copy) {
  bool on;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    on = g_activity_on.count(copy ? CUPTI_ACTIVITY_KIND_MEMCPY : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) > 0;
  }
  if (copy) {
    char host[64], dev[64];
    cudaMemcpy_v3020_params mp{dev, host, 64, cudaMemcpyHostToDevice};
    Api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy", corr, &mp);
    if (!on) return;
    CUpti_ActivityMemcpy6 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.bytes = 64;
    m.start = Now();
    m.end = m.start + 100;
    m.correlationId = corr;
    m.contextId = 1;
    m.streamId = 7;
    Append(m);
    return;
  }
  cudaLaunchKernel_v7000_params lp{};
  Api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", corr, &lp);
  if (on) Append(Kernel("sampled_kernel", corr, 7, 0, 0));
}

// Half of a cudaLaunchKernel pair (correlation id `corr`), as CUPTI delivers a call whose
// callback was switched during it: `site` 0 the enter only (switched off before the exit), 1 the
// exit only (switched on after the enter). Delivered only while the callback is on.
__attribute__((visibility("default"))) void truffld_double_half_launch(unsigned corr, int site) {
  const CUpti_CallbackDomain rt = CUPTI_CB_DOMAIN_RUNTIME_API;
  const CUpti_CallbackId cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  if (!g_subscribed || !g_callback || !Enabled(rt, cbid)) return;
  cudaLaunchKernel_v7000_params lp{};
  uint64_t slot = 12345;  // CUPTI's per-call slot: what an unseen enter left there
  int ret = 0;
  CUpti_CallbackData cb{};
  cb.functionName = "cudaLaunchKernel";
  cb.functionParams = &lp;
  cb.functionReturnValue = &ret;
  cb.correlationId = corr;
  cb.correlationData = &slot;
  cb.callbackSite = site == 0 ? CUPTI_API_ENTER : CUPTI_API_EXIT;
  g_callback(g_userdata, rt, cbid, &cb);
}

// Must be set before InitializeInjection for scenarios that fail during start-up.
__attribute__((visibility("default"))) void truffld_double_set_scenario(const char* scenario) {
  g_scenario = scenario ? scenario : "normal";
}

}  // extern "C"
