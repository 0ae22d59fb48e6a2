#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "truffld/merge/classify.h"

namespace truffld::merge {
namespace {

TEST(CommPayloadFromName, ParsesTheHooksKeyValueForm) {
  auto p = nlohmann::json::parse(
      CommPayloadFromName("nccl:all_reduce, bytes=1048576, world_size=8, impl=pynccl"));
  EXPECT_EQ(p["op"], "all_reduce");
  EXPECT_EQ(p["bytes"], 1048576);
  EXPECT_EQ(p["world_size"], 8);
  EXPECT_EQ(p["impl"], "pynccl");
  auto unknown = nlohmann::json::parse(CommPayloadFromName("nccl:broadcast, bytes=-1, world_size=-1"));
  EXPECT_EQ(unknown["bytes"], -1);
}

TEST(CommPayloadFromName, RejectsOtherNames) {
  EXPECT_EQ(CommPayloadFromName("ncclAllReduce"), "");
  EXPECT_EQ(CommPayloadFromName("aten::mm, seq = 0, op_id = 4"), "");  // spaces around '='
  EXPECT_EQ(CommPayloadFromName("nccl:x, =3"), "");
  EXPECT_EQ(CommPayloadFromName("nccl:x, a b=3"), "");
}

TEST(CommPayloadFromName, HostileValuesStayValidJson) {
  std::string p = CommPayloadFromName("nccl:all_reduce, impl=\"}\\evil\n, bytes=12");
  auto j = nlohmann::json::parse(p);  // throws on invalid JSON
  EXPECT_EQ(j["bytes"], 12);
  EXPECT_EQ(j["impl"], "\"}\\evil");
}

TEST(Rules, HooksDomainsClassify) {
  Rules rules = Rules::Defaults();
  EXPECT_EQ(rules.Classify("torch.Tensor.to /x/all_reduce.py:3", "PyTorch", ""), Layer::kFrontend);
  EXPECT_EQ(rules.Classify("torch.matmul /x/y.py:9", "", ""), Layer::kFrontend);
  EXPECT_EQ(rules.Classify("nccl:all_reduce, bytes=4, world_size=2, impl=pynccl", "", ""), Layer::kComm);
  EXPECT_EQ(rules.Classify("aten::mm, seq = 0, op_id = 4", "", ""), Layer::kBackend);
}

}  // namespace
}  // namespace truffld::merge
