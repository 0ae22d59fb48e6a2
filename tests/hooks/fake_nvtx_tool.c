/*
 * A minimal NVTX tool for tests (loaded through NVTX_INJECTION64_PATH): it appends one line per
 * NVTX call it receives to the file named by $FAKE_NVTX_LOG ("push <name>", "pop",
 * "dpush <domain>|<name>", "dpop <domain>", "mark <name>", "start <name>", "end", "domain
 * <name>"). It proves that libtruffld_pynvtx.so reaches an injected tool exactly as torch's
 * NVTX does, independently of truffld's real injector. Single-threaded test use only: writes
 * are unbuffered and unsynchronised.
 */
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

static int push_a(const char* name) { logline("push", name, NULL); return 0; }
static int pop_(void) { logline("pop", NULL, NULL); return 0; }
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

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const char* path = getenv("FAKE_NVTX_LOG");
  if (path != NULL) g_log = fopen(path, "a");
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
