/*
 * libtruffld_pynvtx.so: a minimal C surface over NVTX's C API for Python (ctypes).
 *
 * Why: the Python hooks must emit NVTX ranges even when torch has no NVTX binding (CPU builds
 * such as Debian's python3-torch) or before torch is imported. NVTX v3 is header-only: the
 * copy compiled into this library loads the tool named by NVTX_INJECTION64_PATH (truffld's
 * libcupti_injector.so) on the first call, exactly as torch's own copy does, so ranges emitted
 * here and by torch reach the same injector. Without that variable every call is a cheap no-op.
 *
 * Every function takes plain C types only (no NVTX types cross the ctypes boundary; a domain is
 * an opaque pointer, NULL meaning NVTX's default domain). Names are UTF-8 C strings and are
 * copied by NVTX/the injector before the call returns.
 *
 * Thread-safety: all functions may be called from any thread; push/pop ranges nest per OS thread
 * (NVTX semantics), start/end ranges may end on another thread. Timestamps are taken by the
 * injector (ns on its clock), not here.
 *
 * The shim also keeps, per thread, the stack of domains of the ranges *it* opened, so Python
 * closes ranges with one call (`truffld_pynvtx_pop_any`, `truffld_pynvtx_pop_to`) and no
 * Python-side bookkeeping on the hot path; a step's push or pop and the detail-window query are
 * one call each (`truffld_pynvtx_step_push`, `truffld_pynvtx_step_pop`). Beyond kMaxDepth
 * nested ranges the domain of the deeper ranges is not remembered and they are closed in the
 * default domain (counted).
 */
#include <stdint.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#if defined(__GNUC__)
#define TRUFFLD_PYNVTX_API __attribute__((visibility("default")))
#else
#define TRUFFLD_PYNVTX_API
#endif

/* ABI version of this surface; Python checks it before binding. Bump on any signature change. */
#define TRUFFLD_PYNVTX_ABI 2

TRUFFLD_PYNVTX_API int truffld_pynvtx_abi(void) { return TRUFFLD_PYNVTX_ABI; }

enum { kMaxDepth = 1024 };
static _Thread_local void* t_domains[kMaxDepth];
static _Thread_local int t_depth = 0;
static unsigned long g_depth_overflows = 0; /* racy counter: diagnostics only */

static void fill_attributes(nvtxEventAttributes_t* attr, const char* name) {
  memset(attr, 0, sizeof(*attr));
  attr->version = NVTX_VERSION;
  attr->size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr->messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr->message.ascii = name;
}

/* Creates (or returns the existing) NVTX domain `name`; returns NULL for NULL/empty names,
 * meaning the default domain. Handles live for the process lifetime. */
TRUFFLD_PYNVTX_API void* truffld_pynvtx_domain_create(const char* name) {
  if (name == NULL || name[0] == '\0') return NULL;
  return (void*)nvtxDomainCreateA(name);
}

/* Opens a push/pop range on the calling thread and remembers its domain; returns the calling
 * thread's depth of shim-opened ranges after the push. */
TRUFFLD_PYNVTX_API int truffld_pynvtx_push(void* domain, const char* name) {
  if (domain == NULL) {
    nvtxRangePushA(name);
  } else {
    nvtxEventAttributes_t attr;
    fill_attributes(&attr, name);
    nvtxDomainRangePushEx((nvtxDomainHandle_t)domain, &attr);
  }
  if (t_depth < kMaxDepth) {
    t_domains[t_depth] = domain;
  } else {
    ++g_depth_overflows;
  }
  return ++t_depth;
}

static void pop_one(void) {
  --t_depth;
  void* domain = t_depth < kMaxDepth ? t_domains[t_depth] : NULL;
  if (domain == NULL) {
    nvtxRangePop();
  } else {
    nvtxDomainRangePop((nvtxDomainHandle_t)domain);
  }
}

/* Closes the innermost shim-opened range of the calling thread; returns the new depth, or -1
 * (and does nothing) when the shim has no open range on this thread. */
TRUFFLD_PYNVTX_API int truffld_pynvtx_pop_any(void) {
  if (t_depth <= 0) return -1;
  pop_one();
  return t_depth;
}

/* Closes shim-opened ranges until the calling thread's depth is `depth`; returns how many. */
TRUFFLD_PYNVTX_API int truffld_pynvtx_pop_to(int depth) {
  int closed = 0;
  if (depth < 0) depth = 0;
  while (t_depth > depth) {
    pop_one();
    ++closed;
  }
  return closed;
}

/* The calling thread's number of open shim ranges. */
TRUFFLD_PYNVTX_API int truffld_pynvtx_depth(void) { return t_depth; }

TRUFFLD_PYNVTX_API unsigned long truffld_pynvtx_depth_overflows(void) { return g_depth_overflows; }

/* Opens a start/end range; the returned id (0 when no tool is attached) is passed to _end. */
TRUFFLD_PYNVTX_API uint64_t truffld_pynvtx_start(void* domain, const char* name) {
  if (domain == NULL) return (uint64_t)nvtxRangeStartA(name);
  nvtxEventAttributes_t attr;
  fill_attributes(&attr, name);
  return (uint64_t)nvtxDomainRangeStartEx((nvtxDomainHandle_t)domain, &attr);
}

TRUFFLD_PYNVTX_API void truffld_pynvtx_end(void* domain, uint64_t id) {
  if (domain == NULL) {
    nvtxRangeEnd((nvtxRangeId_t)id);
    return;
  }
  nvtxDomainRangeEnd((nvtxDomainHandle_t)domain, (nvtxRangeId_t)id);
}

/* An instant marker. */
TRUFFLD_PYNVTX_API void truffld_pynvtx_mark(void* domain, const char* name) {
  if (domain == NULL) {
    nvtxMarkA(name);
    return;
  }
  nvtxEventAttributes_t attr;
  fill_attributes(&attr, name);
  nvtxDomainMarkEx((nvtxDomainHandle_t)domain, &attr);
}

/* The injector's `int truffld_detail_window(unsigned long long* generation)` (inject/python's
 * windows.py finds it and hands it over), asked by the step boundary calls below so that a step
 * boundary costs Python one call at each end. NULL: not set. */
typedef int (*window_query_fn)(unsigned long long*);
static window_query_fn _Atomic g_window_query = NULL;

/* Sets (or, with NULL, clears) the detail-window query asked by the step boundary calls. */
TRUFFLD_PYNVTX_API void truffld_pynvtx_set_window_query(void* query) {
  g_window_query = (window_query_fn)query;
}

static _Thread_local unsigned long long t_generation = 0; /* the last one this thread saw */

/* Asks the query: returns (answer + 2) | (changed << 2), answer -2 when no query is set,
 * changed 1 when `*generation` differs from the one this thread saw at its previous query. */
static int ask_window(unsigned long long* generation) {
  window_query_fn query = g_window_query;
  if (query == NULL) return 0;
  int answer = query(generation);
  int changed = *generation != t_generation;
  t_generation = *generation;
  return (answer + 2) | (changed << 2);
}

/* A step's push followed by the detail-window query (a step boundary, see windows.py): pushes
 * `name` like truffld_pynvtx_push, then asks the query. Returns depth * 8 + changed * 4 +
 * (answer + 2): depth the calling thread's shim depth before the push, answer the query's (1
 * open, 0 closed, -1 not sampling; -2 when no query is set), changed 1 when the generation
 * differs from the one this thread saw at its previous query; `*generation` as the query sets. */
TRUFFLD_PYNVTX_API int truffld_pynvtx_step_push(void* domain, const char* name,
                                                unsigned long long* generation) {
  int depth = truffld_pynvtx_push(domain, name) - 1;
  return depth * 8 + ask_window(generation);
}

/* A step's end: closes shim ranges down to `depth` like truffld_pynvtx_pop_to, then asks the
 * query; returns changed * 4 + (answer + 2) as truffld_pynvtx_step_push does. */
TRUFFLD_PYNVTX_API int truffld_pynvtx_step_pop(int depth, unsigned long long* generation) {
  truffld_pynvtx_pop_to(depth);
  return ask_window(generation);
}

/* Names the calling OS thread in tools (e.g. "truffld model thread"). */
TRUFFLD_PYNVTX_API void truffld_pynvtx_name_thread(uint32_t os_tid, const char* name) {
  nvtxNameOsThreadA(os_tid, name);
}
