// The wire vocabulary (truffld/wire.h) and ParallelFor (truffld/parallel_for.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "truffld/parallel_for.h"
#include "truffld/wire.h"

namespace truffld {
namespace {

TEST(Wire, RecordTypeNamesRoundTrip) {
  for (int t = 1; t < kRecordTypeCount; ++t) EXPECT_EQ(RecordTypeOf(RecordTypeName(RecordType(t))), RecordType(t));
  EXPECT_EQ(RecordTypeName(RecordType::kNvtxPush), "NVTX_PUSH");
  EXPECT_EQ(RecordTypeName(RecordType::kGraphNode), "GRAPH_NODE");
  EXPECT_EQ(RecordTypeOf("DEVICE_WINDOW"), RecordType::kDeviceWindow);
  EXPECT_EQ(RecordTypeOf("nvtx_push"), RecordType::kUnknown);
  EXPECT_EQ(RecordTypeOf(""), RecordType::kUnknown);
}

TEST(Wire, LayerNamesRoundTripAndShortForms) {
  for (uint32_t l = 0; l < kLayerCount; ++l) {
    Layer parsed = Layer::kOther;
    ASSERT_TRUE(ParseLayerName(LayerName(Layer(l)), &parsed));
    EXPECT_EQ(parsed, Layer(l));
  }
  Layer l = Layer::kStep;
  EXPECT_TRUE(ParseLayerName("frontend", &l));
  EXPECT_EQ(l, Layer::kFrontend);
  EXPECT_FALSE(ParseLayerName("kernels", &l));
  EXPECT_STREQ(LayerName(Layer::kRuntime), "runtime_call");
  EXPECT_TRUE(IsDeviceLayer(Layer::kMemset));
  EXPECT_FALSE(IsDeviceLayer(Layer::kSync));
  EXPECT_TRUE(IsApiLayer(Layer::kDriver));
}

TEST(ParallelFor, RunsEveryIndexOnceOnAtMostTheThreadsAsked) {
  for (int threads : {0, 1, 3, 8}) {
    std::vector<std::atomic<int>> seen(1000);
    std::mutex mu;
    std::vector<std::thread::id> ids;
    ParallelFor(seen.size(), threads, [&](size_t i) {
      seen[i].fetch_add(1);
      std::lock_guard<std::mutex> lock(mu);
      if (std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end())
        ids.push_back(std::this_thread::get_id());
    });
    for (auto& s : seen) ASSERT_EQ(s.load(), 1);
    EXPECT_LE(ids.size(), size_t(std::max(threads, 1)));
  }
}

TEST(ParallelFor, RunsOnTheCallerWhenOneThreadOrNothingToDo) {
  std::thread::id where;
  ParallelFor(1, 8, [&](size_t) { where = std::this_thread::get_id(); });
  EXPECT_EQ(where, std::this_thread::get_id());
  int calls = 0;
  ParallelFor(0, 4, [&](size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace truffld
