#include "truffld/merge/event.h"

#include <gtest/gtest.h>

namespace truffld::merge {
namespace {

TEST(StringPool, InternsAndKeepsViewsStable) {
  StringPool p;
  EXPECT_EQ(p.Get(kNoStr), "");
  StrId a = p.Intern("aten::mm");
  StrId e = p.Intern("");
  EXPECT_NE(a, kNoStr);
  EXPECT_NE(e, kNoStr);
  std::string_view va = p.Get(a);
  for (int i = 0; i < 200000; ++i) p.Intern("name" + std::to_string(i));
  std::string big(1 << 20, 'b');
  StrId b = p.Intern(big);
  StrId small = p.Intern("after-big");
  EXPECT_EQ(p.Intern("aten::mm"), a);
  EXPECT_EQ(va, "aten::mm");
  EXPECT_EQ(p.Get(a).data(), va.data());
  EXPECT_EQ(p.Get(b), big);
  EXPECT_EQ(p.Get(small), "after-big");
  EXPECT_EQ(p.Get(e), "");
}

TEST(IngestStats, CountsEveryIssueButKeepsFewMessages) {
  IngestStats s;
  for (int i = 0; i < 100; ++i) s.Report("f:" + std::to_string(i), "malformed_json", "bad");
  s.Add("KERNEL", 3);
  EXPECT_EQ(s.Get("malformed_json"), 100u);
  EXPECT_EQ(s.Get("KERNEL"), 3u);
  EXPECT_EQ(s.issues.size(), IngestStats::kMaxIssuesKept);
}

}  // namespace
}  // namespace truffld::merge
