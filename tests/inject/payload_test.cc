// Unit tests of NVTX payload-extension decoding (NCCL-style static schemas and enums).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <nlohmann/json.hpp>

#include "nvtx_registry.h"

namespace truffld::inject {
namespace {

using nlohmann::json;

constexpr uint64_t kUInt64 = 18, kSize = 22, kInt = 5, kDouble = 20;
constexpr uint64_t kRedOp = (1u << 24) + 11;

struct Reduce { uint64_t comm; size_t bytes; int root; int op; };

std::string Bytes(const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); }

TEST(Payload, DecodesNcclReduceWithEnumAndContractKeys) {
  NvtxRegistry reg;
  NvtxDomain* nccl = reg.CreateDomain("NCCL");
  reg.RegisterEnum(nccl, kRedOp, PayloadEnum{4, {{0, "Sum"}, {2, "Max"}}});
  PayloadSchema s;
  s.name = "Reduce";
  s.entries = {{kUInt64, "NCCL communicator ID", offsetof(Reduce, comm), 0, 0},
               {kSize, "Message size [bytes]", offsetof(Reduce, bytes), 0, 0},
               {kInt, "Root", offsetof(Reduce, root), 0, 0},
               {kRedOp, "Reduction operation", offsetof(Reduce, op), 0, 0}};
  const uint64_t id = reg.RegisterSchema(nccl, (1u << 24) + 8, s);
  EXPECT_EQ(id, (1u << 24) + 8);
  Reduce p{0xdeadbeefcafeull, 1 << 20, 1, 2};
  const json j = json::parse(reg.DecodePayload(nccl, id, Bytes(&p, sizeof p)));
  EXPECT_EQ(j["schema"], "Reduce");
  EXPECT_EQ(j["comm"], 0xdeadbeefcafeull);
  EXPECT_EQ(j["bytes"], 1 << 20);
  EXPECT_EQ(j["root"], 1);
  EXPECT_EQ(j["op"], "Max");
}

TEST(Payload, UnknownSchemaOrOtherDomainIsNotDecoded) {
  NvtxRegistry reg;
  NvtxDomain* a = reg.CreateDomain("a");
  NvtxDomain* b = reg.CreateDomain("b");
  const uint64_t id = reg.RegisterSchema(a, 0, PayloadSchema{"x", {{kInt, "v", 0, 0, 0}}, 4});
  EXPECT_GE(id, uint64_t{1} << 32) << "dynamic ids come from the dynamic range";
  int v = 3;
  EXPECT_EQ(reg.DecodePayload(b, id, Bytes(&v, 4)), "");
  EXPECT_EQ(reg.DecodePayload(a, id + 1, Bytes(&v, 4)), "");
  EXPECT_EQ(json::parse(reg.DecodePayload(a, id, Bytes(&v, 4)))["v"], 3);
}

TEST(Payload, TruncatedBytesAndNaturalLayoutAndDoubles) {
  NvtxRegistry reg;
  // Offsets left at 0 after the first entry: natural alignment is assumed.
  PayloadSchema s{"", {{kInt, "a", 0, 0, 0}, {kDouble, "b", 0, 0, 0}}, 16};
  const uint64_t id = reg.RegisterSchema(nullptr, 77, s);
  struct { int a; double b; } p{-2, 1.5};
  json j = json::parse(reg.DecodePayload(nullptr, id, Bytes(&p, sizeof p)));
  EXPECT_EQ(j["a"], -2);
  EXPECT_DOUBLE_EQ(j["b"].get<double>(), 1.5);
  j = json::parse(reg.DecodePayload(nullptr, id, Bytes(&p, 6)));
  EXPECT_EQ(j["b"], "<truncated>");
}

TEST(Payload, KeyMapping) {
  EXPECT_EQ(PayloadKeyFor("NCCL communicator ID"), "comm");
  EXPECT_EQ(PayloadKeyFor("Parent NCCL communicator ID"), "parent_nccl_communicator_id");
  EXPECT_EQ(PayloadKeyFor("Message size [bytes]"), "bytes");
  EXPECT_EQ(PayloadKeyFor("Peer rank"), "peer");
  EXPECT_EQ(PayloadKeyFor("No. of ranks"), "nranks");
  EXPECT_EQ(PayloadKeyFor("Rank"), "rank");
  EXPECT_EQ(PayloadKeyFor("CUDA device"), "cuda_device");
  EXPECT_EQ(PayloadKeyFor("  Split color (#) "), "split_color");
  EXPECT_EQ(PayloadKeyFor("[]"), "field");
}

}  // namespace
}  // namespace truffld::inject
