// NvtxRegistry: see nvtx_registry.h.
#include "nvtx_registry.h"

#include <cctype>
#include <cstring>

#include "json_out.h"

namespace truffld::inject {

namespace {
// Predefined entry types of the NVTX payload extension (nvToolsExtPayload.h), restated here so
// this file needs no NVTX header.
enum : uint64_t {
  kChar = 1, kUChar, kShort, kUShort, kInt, kUInt, kLong, kULong, kLongLong, kULongLong,
  kInt8, kUInt8, kInt16, kUInt16, kInt32, kUInt32, kInt64, kUInt64, kFloat, kDouble,
  kLongDouble, kSize, kAddress,
  kFloat32 = 43, kFloat64 = 44,
  kCategory = 68, kColor = 69, kScopeId = 70, kPid32 = 71, kPid64 = 72, kTid32 = 73, kTid64 = 74,
};

bool IsSigned(uint64_t t) {
  return t == kChar || t == kShort || t == kInt || t == kLong || t == kLongLong || t == kInt8 ||
         t == kInt16 || t == kInt32 || t == kInt64;
}

// Reads a little-endian integer of `size` bytes; sign-extends when `is_signed`.
bool ReadInt(std::string_view bytes, uint64_t off, size_t size, bool is_signed, uint64_t* out) {
  if (size == 0 || size > 8 || off > bytes.size() || bytes.size() - off < size) return false;
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + off, size);
  if (is_signed && size < 8 && (v >> (size * 8 - 1)) & 1) v |= ~uint64_t{0} << (size * 8);
  *out = v;
  return true;
}
}  // namespace

size_t PayloadTypeSize(uint64_t t) {
  switch (t) {
    case kChar: case kUChar: case kInt8: case kUInt8: return 1;
    case kShort: case kUShort: case kInt16: case kUInt16: return 2;
    case kInt: case kUInt: case kInt32: case kUInt32: case kFloat: case kFloat32:
    case kCategory: case kColor: case kPid32: case kTid32: return 4;
    case kLong: case kULong: return sizeof(long);
    case kLongLong: case kULongLong: case kInt64: case kUInt64: case kDouble: case kFloat64:
    case kScopeId: case kPid64: case kTid64: return 8;
    case kSize: return sizeof(size_t);
    case kAddress: return sizeof(void*);
    default: return 0;
  }
}

std::string PayloadKeyFor(std::string_view n) {
  auto has = [&](const char* s) { return n.find(s) != std::string_view::npos; };
  if (has("communicator") && !has("Parent")) return "comm";
  if (has("Message size") || n == "bytes") return "bytes";
  if (has("Reduction")) return "op";
  if (n == "Root") return "root";
  if (has("Peer")) return "peer";
  if (n == "No. of ranks" || n == "Number of ranks") return "nranks";
  // Anything else: lower case, each run of other characters one '_', none at either end.
  std::string k;
  for (char c : n) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      k.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!k.empty() && k.back() != '_') {
      k.push_back('_');
    }
  }
  while (!k.empty() && k.back() == '_') k.pop_back();
  return k.empty() ? "field" : k;
}

NvtxDomain* NvtxRegistry::CreateDomain(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& d : domains_) if (d->name == name) return d.get();
  domains_.push_back(std::make_unique<NvtxDomain>(NvtxDomain{std::string(name)}));
  return domains_.back().get();
}

NvtxString* NvtxRegistry::RegisterString(std::string_view text) {
  std::lock_guard<std::mutex> lock(mu_);
  strings_.push_back(std::make_unique<NvtxString>(NvtxString{std::string(text)}));
  return strings_.back().get();
}

void NvtxRegistry::NameCategory(const void* domain, uint32_t category, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  categories_[{domain, category}] = std::string(name);
}

uint64_t NvtxRegistry::RegisterSchema(const void* domain, uint64_t requested_id, PayloadSchema s) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = requested_id ? requested_id : next_dynamic_id_++;
  schemas_[{domain, id}] = std::move(s);
  return id;
}

uint64_t NvtxRegistry::RegisterEnum(const void* domain, uint64_t requested_id, PayloadEnum e) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = requested_id ? requested_id : next_dynamic_id_++;
  enums_[{domain, id}] = std::move(e);
  return id;
}

std::string NvtxRegistry::DomainName(const void* domain) const {
  if (!domain) return {};
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<const NvtxDomain*>(domain)->name;
}

std::string NvtxRegistry::CategoryName(const void* domain, uint32_t category) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = categories_.find({domain, category});
  return it == categories_.end() ? std::string() : it->second;
}

std::string NvtxRegistry::DecodePayload(const void* domain, uint64_t schema_id,
                                        std::string_view bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = schemas_.find({domain, schema_id});
  if (it == schemas_.end()) return {};
  const PayloadSchema& s = it->second;
  JsonObject o;
  if (!s.name.empty()) o.Str("schema", s.name);
  uint64_t natural = 0;  // running offset for entries that give none (packed natural layout)
  for (size_t i = 0; i < s.entries.size(); ++i) {
    const PayloadEntry& e = s.entries[i];
    const std::string key = PayloadKeyFor(e.name.empty() ? "field" + std::to_string(i) : e.name);
    const auto en = enums_.find({domain, e.type});
    size_t size = en != enums_.end() ? en->second.size : PayloadTypeSize(e.type);
    uint64_t off = e.offset;
    if (off == 0 && i > 0 && size) off = (natural + size - 1) / size * size;
    if (size == 0 || e.array_len > 1 || e.flags != 0) {
      // Arrays, strings and nested schemas are outside what truffld decodes; say so.
      o.Str(key, "<undecoded>");
      continue;
    }
    natural = off + size;
    uint64_t v = 0;
    if (!ReadInt(bytes, off, size, IsSigned(e.type), &v)) {
      o.Str(key, "<truncated>");
      continue;
    }
    if (en != enums_.end()) {
      std::string label;
      for (const auto& [val, name] : en->second.values) if (val == v) label = name;
      if (label.empty()) o.UInt(key, v); else o.Str(key, label);
    } else if (e.type == kFloat || e.type == kFloat32) {
      float f; uint32_t u = static_cast<uint32_t>(v); std::memcpy(&f, &u, 4); o.Double(key, f);
    } else if (e.type == kDouble || e.type == kFloat64) {
      double d; std::memcpy(&d, &v, 8); o.Double(key, d);
    } else if (IsSigned(e.type)) {
      o.Int(key, static_cast<int64_t>(v));
    } else {
      o.UInt(key, v);
    }
  }
  return o.Finish();
}

}  // namespace truffld::inject
