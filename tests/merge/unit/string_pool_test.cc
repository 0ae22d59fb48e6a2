#include "truffld/merge/event.h"

#include <gtest/gtest.h>


#include <string>
#include <vector>

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

// Strings that differ in one byte at any position, of every length the hash reads differently
// (0-3, 4-7, 8-16, the 16-byte rounds and their tails), get distinct, dense ids in first-seen
// order, and interning them again after the table has grown many times returns the same ids.
TEST(StringPool, DistinguishesEveryByteAndLengthAcrossGrowth) {
  StringPool p;
  std::vector<std::string> keys;
  for (size_t len = 0; len <= 70; ++len) {
    std::string base(len, 'x');
    keys.push_back(base);
    for (size_t at = 0; at < len; ++at) {
      std::string k = base;
      k[at] = 'y';
      keys.push_back(k);
      k[at] = '\0';  // embedded NUL is an ordinary byte
      keys.push_back(k);
    }
  }
  std::vector<StrId> ids;
  for (const auto& k : keys) ids.push_back(p.Intern(k));
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(ids[i], StrId(i + 1)) << "key " << i;
  for (int i = 0; i < 50000; ++i) p.Intern("grow" + std::to_string(i));
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(p.Intern(keys[i]), ids[i]) << "key " << i;
    EXPECT_EQ(p.Get(ids[i]), keys[i]);
  }
  EXPECT_EQ(p.size(), 1 + keys.size() + 50000);
}

// Add stores without looking up: each call gets its own id, and interning the same text later
// gets yet another (Add's strings are never found); growth of the table (which Add's strings
// do not count towards) keeps every interned id findable.
TEST(StringPool, AddStoresWithoutInterning) {
  StringPool p;
  const StrId a = p.Intern("aten::mm");
  std::vector<StrId> added;
  for (int i = 0; i < 100000; ++i) added.push_back(p.Add("{\"External id\":" + std::to_string(i % 7) + "}"));
  EXPECT_EQ(added[0], a + 1);
  EXPECT_NE(added[0], added[7]);  // same text, distinct ids
  EXPECT_EQ(p.Get(added[7]), "{\"External id\":0}");
  const StrId again = p.Intern("{\"External id\":0}");
  EXPECT_NE(again, added[0]);
  for (int i = 0; i < 5000; ++i) p.Intern("grow" + std::to_string(i));
  EXPECT_EQ(p.Intern("aten::mm"), a);
  EXPECT_EQ(p.Intern("{\"External id\":0}"), again);
  EXPECT_EQ(p.Intern("grow4999"), p.Intern("grow4999"));
  EXPECT_EQ(p.size(), 3 + added.size() + 5000);  // kNoStr, "aten::mm", `again`
  for (int i = 0; i < 100000; i += 9973) EXPECT_EQ(p.Get(added[i]), "{\"External id\":" + std::to_string(i % 7) + "}");
}

TEST(StringPool, HashDependsOnEveryByteLengthAndSeed) {
  for (size_t len = 1; len <= 40; ++len) {
    std::string s(len, 'a');
    const uint64_t h = HashBytes(s, 1);
    EXPECT_NE(HashBytes(s, 2), h);
    EXPECT_NE(HashBytes(s + 'a', 1), h);
    for (size_t at = 0; at < len; ++at) {
      std::string t = s;
      t[at] = 'b';
      EXPECT_NE(HashBytes(t, 1), h) << len << " " << at;
    }
  }
}

TEST(IngestStats, CountsEveryIssueButKeepsFewMessages) {
  IngestStats s;
  for (int i = 0; i < 100; ++i) s.Report("f:" + std::to_string(i), Problem::kMalformedJson, "bad");
  s.AddKept(EventKind::kKernel, 3);
  s.Add(Problem::kMissingMeta);
  EXPECT_EQ(s.Get(Problem::kMalformedJson), 100u);
  EXPECT_EQ(s.Kept(EventKind::kKernel), 3u);
  EXPECT_EQ(s.issues.size(), IngestStats::kMaxIssuesKept);
  // summary.json lists the keys in the order first met, by their stats-table names.
  ASSERT_EQ(s.counts.items.size(), 3u);
  EXPECT_STREQ(IngestStats::Name(s.counts.items[0].first), "malformed_json");
  EXPECT_STREQ(IngestStats::Name(s.counts.items[1].first), "KERNEL");
  EXPECT_STREQ(IngestStats::Name(s.counts.items[2].first), "missing_meta");
}

}  // namespace
}  // namespace truffld::merge
