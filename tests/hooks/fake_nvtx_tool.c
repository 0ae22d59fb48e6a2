/*
 * A minimal NVTX tool for tests (loaded through NVTX_INJECTION64_PATH): it appends one line per
 * NVTX call it receives to the file named by $FAKE_NVTX_LOG ("push <name>", "pop",
 * "dpush <domain>|<name>", "dpop <domain>", "mark <name>", "start <name>", "end", "domain
 * <name>"). It proves that libtruffld_pynvtx.so reaches an injected tool exactly as torch's
 * NVTX does, independently of truffld's real injector. Single-threaded test use only: writes
 * are unbuffered and unsynchronised.
 *
 * It also stands in for the injector's detail-window export, `int truffld_detail_window(unsigned
 * long long* generation)` (1 open, 0 closed, -1 not sampling; *generation = windows opened so
 * far), for the hooks' window tests and benchmark. $FAKE_DETAIL_WINDOW sets the answer: unset or
 * "-1" (not sampling: the hooks keep every layer on, as with a tool without the export), "0",
 * "1", or "steps:N:M" (a window over M consecutive outermost default-domain push ranges whose
 * name starts with "step", in every N, like the injector's TRUFFLD_DEVICE_WINDOWS=steps:N:M:
 * opened before the step's push, closed after its pop). Tests change the answer at any time
 * with `fake_detail_set(answer)` (opening a window counts one generation).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

static FILE* g_log = NULL;

static void logline(const char* what, const char* a, const char* b) {
  if (g_log == NULL) return;
  fprintf(g_log, "%s%s%s%s%s\n", what, a ? " " : "", a ? a : "", b ? "|" : "", b ? b : "");
  fflush(g_log);
}

static const char* message_of(const nvtxEventAttributes_t* attr) {
  if (attr == NULL || attr->messageType != NVTX_MESSAGE_TYPE_ASCII) return "?";
  return attr->message.ascii;
}

#define EXPORT __attribute__((visibility("default")))

static atomic_int g_answer = -1;
static atomic_ullong g_generation = 0;
static unsigned long g_plan_every = 0, g_plan_steps = 0, g_step = 0;
static _Thread_local int t_depth = 0, t_step = 0;

EXPORT void fake_detail_set(int answer) {
  if (answer == 1 && atomic_exchange(&g_answer, 1) != 1) {
    atomic_fetch_add(&g_generation, 1);
  } else {
    atomic_store(&g_answer, answer);
  }
}

EXPORT int truffld_detail_window(unsigned long long* generation) {
  if (generation != NULL) *generation = atomic_load(&g_generation);
  return atomic_load(&g_answer);
}

static void read_plan(void) {
  const char* plan = getenv("FAKE_DETAIL_WINDOW");
  if (plan == NULL) return;
  if (sscanf(plan, "steps:%lu:%lu", &g_plan_every, &g_plan_steps) == 2 && g_plan_every > 0) {
    atomic_store(&g_answer, 0);
  } else {
    g_plan_every = 0;
    atomic_store(&g_answer, atoi(plan));
  }
}

static int in_plan(unsigned long step) { return step % g_plan_every < g_plan_steps; }

static int push_a(const char* name) {
  if (t_depth++ == 0) {
    t_step = g_plan_every > 0 && strncmp(name, "step", 4) == 0;
    if (t_step && in_plan(g_step)) fake_detail_set(1);
  }
  logline("push", name, NULL);
  return 0;
}
static int pop_(void) {
  logline("pop", NULL, NULL);
  if (t_depth > 0 && --t_depth == 0 && t_step && atomic_load(&g_answer) >= 0) {
    if (!in_plan(++g_step)) fake_detail_set(0);
  }
  return 0;
}
static void mark_a(const char* name) { logline("mark", name, NULL); }
static nvtxRangeId_t start_a(const char* name) { logline("start", name, NULL); return 7; }
static void end_(nvtxRangeId_t id) { (void)id; logline("end", NULL, NULL); }
static nvtxDomainHandle_t domain_create_a(const char* name) {
  logline("domain", name, NULL);
  return (nvtxDomainHandle_t)strdup(name);
}
static int dpush(nvtxDomainHandle_t d, const nvtxEventAttributes_t* attr) {
  logline("dpush", (const char*)d, message_of(attr));
  return 0;
}
static int dpop(nvtxDomainHandle_t d) { logline("dpop", (const char*)d, NULL); return 0; }
static void dmark(nvtxDomainHandle_t d, const nvtxEventAttributes_t* attr) {
  logline("dmark", (const char*)d, message_of(attr));
}

static void set_slot(NvtxFunctionTable table, unsigned int size, unsigned int id,
                     NvtxFunctionPointer fn) {
  if (id < size && table[id] != NULL) *table[id] = fn;
}

EXPORT int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const char* path = getenv("FAKE_NVTX_LOG");
  if (path != NULL) g_log = fopen(path, "a");
  read_plan();
  const NvtxExportTableCallbacks* callbacks =
      (const NvtxExportTableCallbacks*)get_export_table(NVTX_ETID_CALLBACKS);
  if (callbacks == NULL) return 0;
  NvtxFunctionTable core = NULL, core2 = NULL;
  unsigned int core_size = 0, core2_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size)) return 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size)) return 0;
  set_slot(core, core_size, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)push_a);
  set_slot(core, core_size, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)pop_);
  set_slot(core, core_size, NVTX_CBID_CORE_MarkA, (NvtxFunctionPointer)mark_a);
  set_slot(core, core_size, NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)start_a);
  set_slot(core, core_size, NVTX_CBID_CORE_RangeEnd, (NvtxFunctionPointer)end_);
  set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)domain_create_a);
  set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)dpush);
  set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)dpop);
  set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, (NvtxFunctionPointer)dmark);
  return 1;
}
