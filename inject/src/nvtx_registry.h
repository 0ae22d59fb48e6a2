// NvtxRegistry: the process-lifetime objects NVTX hands out as handles, and payload schemas.
//
// NVTX domains, registered strings, category names and payload-extension schemas/enums are
// registered rarely (usually once at start-up) and referenced by every later event. The registry
// interns them: a domain handle or registered-string handle given to the application is a
// pointer to an object owned here that is never freed (an application may keep using a handle
// after destroying its domain, and queued records still refer to it). It also implements
// RecordContext, so the writer thread can turn handles and binary payloads back into JSON.
// Payload decoding follows the NVTX payload extension: a static schema is a list of typed
// entries at byte offsets; NCCL's entry names are mapped to the contract's keys
// {comm, bytes, op, root, peer}, and enum-typed entries print their registered names.
// Thread-safety: all methods are safe from any thread (one mutex; registration is rare and the
// hot path never calls in here except through handles it already holds).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format.h"

namespace truffld::inject {

struct NvtxDomain {
  std::string name;
};

struct NvtxString {
  std::string text;
};

// One entry of a payload schema, copied from the application's description.
struct PayloadEntry {
  uint64_t type = 0;       // NVTX_PAYLOAD_ENTRY_TYPE_* value, or a registered enum's schema id
  std::string name;
  uint64_t offset = 0;
  uint64_t flags = 0;
  uint64_t array_len = 0;
};

struct PayloadSchema {
  std::string name;
  std::vector<PayloadEntry> entries;
  uint64_t static_size = 0;
};

struct PayloadEnum {
  uint64_t size = 4;                                   // bytes of the enum value
  std::vector<std::pair<uint64_t, std::string>> values;
};

class NvtxRegistry final : public RecordContext {
 public:
  NvtxDomain* CreateDomain(std::string_view name);
  NvtxString* RegisterString(std::string_view text);
  void NameCategory(const void* domain, uint32_t category, std::string_view name);

  // Registers a schema and returns its id: `requested_id` when non-zero, otherwise a fresh id
  // from the dynamic range (>= 2^32) as the payload extension prescribes.
  uint64_t RegisterSchema(const void* domain, uint64_t requested_id, PayloadSchema schema);
  uint64_t RegisterEnum(const void* domain, uint64_t requested_id, PayloadEnum e);

  // RecordContext:
  std::string DomainName(const void* domain) const override;
  std::string CategoryName(const void* domain, uint32_t category) const override;
  std::string DecodePayload(const void* domain, uint64_t schema_id,
                            std::string_view bytes) const override;

 // Held across fork() so that no other thread owns it in the child.
  std::mutex& mutex_for_fork() { return mu_; }

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<NvtxDomain>> domains_;
  std::vector<std::unique_ptr<NvtxString>> strings_;
  std::map<std::pair<const void*, uint32_t>, std::string> categories_;
  std::map<std::pair<const void*, uint64_t>, PayloadSchema> schemas_;
  std::map<std::pair<const void*, uint64_t>, PayloadEnum> enums_;
  uint64_t next_dynamic_id_ = uint64_t{1} << 32;
};

// Contract key for a payload entry name: NCCL's "NCCL communicator ID" -> "comm",
// "Message size [bytes]" -> "bytes", "Reduction operation" -> "op", "Root" -> "root",
// "Peer rank" -> "peer"; other names are lower-cased with non-alphanumerics as '_'.
std::string PayloadKeyFor(std::string_view entry_name);

// Size in bytes of a predefined NVTX payload entry type on this platform, or 0 if unknown.
size_t PayloadTypeSize(uint64_t type);

}  // namespace truffld::inject
