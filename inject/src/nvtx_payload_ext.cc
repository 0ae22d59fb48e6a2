// NVTX payload extension: schema and enum registration handlers. See nvtx_inject.h.
//
// Payloads reach truffld two ways: through the core handlers (an event attribute with
// payloadType NVTX_PAYLOAD_TYPE_EXT) and through the extension's own events
// (nvtxRangePopPayload & co., handled in nvtx_inject.cc). Here truffld learns how to decode them.
// Schemas and enums are copied into the NvtxRegistry, so the application's descriptions may be
// freed.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include "nvtx_inject.h"
#include "tracer.h"

namespace truffld::inject {

namespace {

Tracer* g_tracer = nullptr;

uint64_t NVTX_API SchemaRegister(nvtxDomainHandle_t domain, const nvtxPayloadSchemaAttr_t* attr) {
  if (!attr || !g_tracer) return 0;
  PayloadSchema s;
  const uint64_t m = attr->fieldMask;
  if ((m & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NAME) && attr->name) s.name = attr->name;
  if ((m & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE)) s.static_size = attr->payloadStaticSize;
  if ((m & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES) && attr->entries) {
    const size_t n = (m & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES) ? attr->numEntries : 0;
    for (size_t i = 0; i < n && i < 256; ++i) {
      const nvtxPayloadSchemaEntry_t& e = attr->entries[i];
      PayloadEntry pe;
      pe.type = e.type;
      pe.name = e.name ? e.name : "";
      pe.offset = e.offset;
      pe.flags = e.flags;
      pe.array_len = e.arrayOrUnionDetail;
      s.entries.push_back(std::move(pe));
    }
  }
  const uint64_t id = (m & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID) ? attr->schemaId : 0;
  return g_tracer->nvtx().RegisterSchema(domain, id, std::move(s));
}

uint64_t NVTX_API EnumRegister(nvtxDomainHandle_t domain, const nvtxPayloadEnumAttr_t* attr) {
  if (!attr || !g_tracer) return 0;
  PayloadEnum e;
  const uint64_t m = attr->fieldMask;
  if (m & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE) e.size = attr->sizeOfEnum;
  if ((m & NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES) && attr->entries) {
    const size_t n = (m & NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES) ? attr->numEntries : 0;
    for (size_t i = 0; i < n && i < 4096; ++i) {
      e.values.emplace_back(attr->entries[i].value, attr->entries[i].name ? attr->entries[i].name : "");
    }
  }
  const uint64_t id = (m & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID) ? attr->schemaId : 0;
  return g_tracer->nvtx().RegisterEnum(domain, id, std::move(e));
}

uint8_t NVTX_API DomainIsEnabled(nvtxDomainHandle_t) { return 1; }

}  // namespace

int AttachNvtxPayloadExtension(Tracer* tracer, void* module_info) {
  auto* info = static_cast<nvtxExtModuleInfo_t*>(module_info);
  if (!tracer || !info) return 0;
  g_tracer = tracer;
  if (info->moduleId != NVTX_EXT_PAYLOAD_MODULEID || info->segmentsCount < 1 || !info->segments) {
    return 1;  // another extension (counters, memory, ...): leave its calls as no-ops
  }
  nvtxExtModuleSegment_t& seg = info->segments[0];
  auto set = [&](size_t slot, auto fn) {
    if (slot < seg.slotCount) seg.functionSlots[slot] = reinterpret_cast<intptr_t>(fn);
  };
  set(NVTX3EXT_CBID_nvtxPayloadSchemaRegister, SchemaRegister);
  set(NVTX3EXT_CBID_nvtxPayloadEnumRegister, EnumRegister);
  set(NVTX3EXT_CBID_nvtxDomainIsEnabled, DomainIsEnabled);
  FillNvtxPayloadEventSlots(seg.functionSlots, seg.slotCount);
  return 1;
}

}  // namespace truffld::inject
