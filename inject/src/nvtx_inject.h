// NVTX injection adapter: the NVTX 3 export-table handshake and the event handlers.
//
// NVTX calls InitializeInjectionNvtx2(getExportTable) once per process when
// NVTX_INJECTION64_PATH names this library. AttachNvtx fills NVTX's function tables for the
// CORE module (push/pop, start/end, marks, categories) and the CORE2 module (domains,
// registered strings, domain-scoped events) with handlers that turn each call into one Record
// on the calling thread's ring. AttachNvtxPayloadExtension does the same for the payload
// extension: schema and enum registration (how NCCL describes its collective parameters) and
// the extension's own events (nvtxRangePushPayload, nvtxRangePopPayload, ... ; NCCL closes
// ncclCommInitRank and other API ranges with nvtxRangePopPayload). Only these two files see NVTX
// types.
// Thread-safety: handlers run on application threads concurrently; they only touch the
// thread's own ring and, for rare registrations, the NvtxRegistry (mutex).
#pragma once

#include <cstddef>
#include <cstdint>

namespace truffld::inject {

class Tracer;

// `get_export_table` is NVTX's NvtxGetExportTableFunc_t. Returns 1 on success, 0 on failure
// (NVTX then turns every call into a no-op).
int AttachNvtx(Tracer* tracer, const void* (*get_export_table)(uint32_t));

// `module_info` is NVTX's nvtxExtModuleInfo_t*. Returns 1 (modules truffld does not handle
// simply keep their no-op functions).
int AttachNvtxPayloadExtension(Tracer* tracer, void* module_info);

// Points the payload extension's event slots (NVTX3EXT_CBID_nvtxMarkPayload ..
// nvtxRangeEndPayload) of a module segment at truffld's handlers. Needs AttachNvtx first.
void FillNvtxPayloadEventSlots(intptr_t* slots, size_t slot_count);

}  // namespace truffld::inject
