// TreeReader on deep trees: a call chain of thousands of nested ranges (the JSON parser's
// default depth dropped trees of about 500) is read whole, without exhausting the stack; a tree
// past the reader's depth limit is a bad line named by file:line and its step, and counted.
#include <string>

#include <gtest/gtest.h>

#include "read/tree_reader.h"

namespace truffld::diagnose {
namespace {

// One vertical trees line of step `step`: `depth` operator ranges, each inside the one before
// (range i spans [i, 1,000,000 - i]), the innermost launching one kernel.
std::string DeepChain(int depth, int step) {
  std::string line = R"({"schema":"truffld.trees/1","rank":0,"step_index":)" + std::to_string(step) +
                     R"(,"step":"s","requests":["a"],"view":"vertical","start":0,"end":1000000,"root":)";
  for (int i = 0; i < depth; ++i) {
    line += R"({"name":"op","layer":"frontend_op","family":"op","thread_id":1,"start":)" + std::to_string(i) +
            R"(,"end":)" + std::to_string(1000000 - i) + R"(,"children":[)";
  }
  line += R"({"name":"cudaLaunchKernel","layer":"runtime_call","family":"cudaLaunchKernel","thread_id":1,)"
          R"("start":500000,"end":500010,"children":[{"name":"k","layer":"kernel","family":"k","start":500020,)"
          R"("end":500120}]})";
  for (int i = 0; i < depth; ++i) line += "]}";
  return line + "}";
}

TEST(TreeReaderDepth, ThousandsOfNestedRangesAreReadWhole) {
  constexpr int kDepth = 6000;  // 12,000 JSON levels
  TreeReader r;
  r.set_outside_time(false);
  r.ParseLine(DeepChain(kDepth, 3), "deep.jsonl:1");
  EXPECT_EQ(r.stats().bad_lines, 0u) << (r.stats().problems.empty() ? "" : r.stats().problems[0]);
  EXPECT_EQ(r.stats().too_deep_trees, 0u);
  const InstanceTable t = r.Finish();
  ASSERT_EQ(t.size(), static_cast<size_t>(kDepth));
  // Sorted by start: instance i is range i; each outer range's self time is the 1 ns at each
  // end around its child, and only the innermost holds the kernel its call launched.
  EXPECT_EQ(t.features[0][kSelfTimeNs], 2);
  EXPECT_EQ(t.features[kDepth - 1][kKernelCount], 1);
  EXPECT_EQ(t.features[0][kKernelCount], 1);  // subtree columns add up the whole chain
  EXPECT_EQ(t.detail[kDepth - 1].parent, kDepth - 2);
  EXPECT_TRUE(t.detail[kDepth - 1].flags & kDetailHasDevice);
  EXPECT_FALSE(t.detail[0].flags & kDetailHasDevice);
}

TEST(TreeReaderDepth, PastTheLimitIsABadLineNamingItsStep) {
  TreeReader r;
  r.ParseLine(DeepChain(9000, 77), "deep.jsonl:5");  // 18,000 JSON levels
  EXPECT_EQ(r.stats().bad_lines, 1u);
  EXPECT_EQ(r.stats().too_deep_trees, 1u);
  ASSERT_EQ(r.stats().problems.size(), 1u);
  const std::string& p = r.stats().problems[0];
  EXPECT_NE(p.find("deep.jsonl:5: "), std::string::npos) << p;
  EXPECT_NE(p.find("step 77 of rank 0"), std::string::npos) << p;
}

}  // namespace
}  // namespace truffld::diagnose
