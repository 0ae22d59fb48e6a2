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
#define TRUFFLD_PYNVTX_ABI 1

TRUFFLD_PYNVTX_API int truffld_pynvtx_abi(void) { return TRUFFLD_PYNVTX_ABI; }

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

/* Opens a push/pop range on the calling thread. Returns the nesting depth NVTX reports (0-based
 * level of the new range), or a negative value when no tool is attached. */
TRUFFLD_PYNVTX_API int truffld_pynvtx_push(void* domain, const char* name) {
  if (domain == NULL) return nvtxRangePushA(name);
  nvtxEventAttributes_t attr;
  fill_attributes(&attr, name);
  return nvtxDomainRangePushEx((nvtxDomainHandle_t)domain, &attr);
}

/* Closes the innermost push/pop range of `domain` on the calling thread. */
TRUFFLD_PYNVTX_API int truffld_pynvtx_pop(void* domain) {
  if (domain == NULL) return nvtxRangePop();
  return nvtxDomainRangePop((nvtxDomainHandle_t)domain);
}

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

/* Names the calling OS thread in tools (e.g. "truffld model thread"). */
TRUFFLD_PYNVTX_API void truffld_pynvtx_name_thread(uint32_t os_tid, const char* name) {
  nvtxNameOsThreadA(os_tid, name);
}
