// KeptArgs: args objects made compact, checked in batches, invalid ones found and dropped.
#include "importers/kineto/kept_args.h"

#include <gtest/gtest.h>

#include <iterator>

#include <string>
#include <vector>

namespace truffld::merge::kineto {
namespace {

// The objects' texts back to back in one padded buffer, as they lie in a parsed document.
struct Doc {
  std::string text;
  std::vector<std::string_view> objects;
  explicit Doc(const std::vector<std::string>& objs) {
    size_t total = 0;
    for (const std::string& o : objs) total += o.size() + 1;
    text.reserve(total + 64);  // simdjson's padding
    std::vector<size_t> at;
    for (const std::string& o : objs) {
      at.push_back(text.size());
      text += o;
      text += '\n';
    }
    for (size_t i = 0; i < objs.size(); ++i) objects.emplace_back(text.data() + at[i], objs[i].size());
  }
};

TEST(KeptArgs, CompactTextIsKeptAsWrittenAndEmptyObjectsAreNone) {
  StringPool pool;
  std::vector<StrId> ids;
  KeptArgs kept(&pool, &ids);
  Doc doc({"{\n  \"External id\": 7, \"x\": 1e3,\n  \"s\": \"a  b\\n\\u00e9\" }", "{ }", ""});
  for (size_t i = 0; i < doc.objects.size(); ++i) kept.Add(doc.objects[i], i + 1);
  EXPECT_TRUE(kept.Check().empty());
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(pool.Get(ids[0]), "{\"External id\":7,\"x\":1e3,\"s\":\"a  b\\n\\u00e9\"}");
  EXPECT_EQ(ids[1], kNoStr);
  EXPECT_EQ(ids[2], kNoStr);
}

// Thousands of objects over several batches, a few invalid in different ways: exactly those
// are dropped and named (event number and position), in document order; the rest are kept.
TEST(KeptArgs, InvalidObjectsAreFoundInsideLargeBatches) {
  std::vector<std::string> objs;
  std::vector<size_t> bad;
  const char* kBad[] = {"{\"a\": tru}", "{\"a\": [1,,2]}", "{\"a\": \"\\q\"}", "{\"a\": 01}", "{\"a\" 1}",
                        "{\"a\": \"\\ud800\"}", "{\"a\": {\"b\": nul}}"};
  for (size_t i = 0; i < 40000; ++i) {
    if (i % 5000 == 17) {
      bad.push_back(i);
      objs.push_back(kBad[bad.size() % std::size(kBad)]);
    } else {
      objs.push_back("{\"External id\": " + std::to_string(i) + ", \"Input Dims\": [[4, 8], [8, 16]]}");
    }
  }
  Doc doc(objs);
  StringPool pool;
  std::vector<StrId> ids;
  KeptArgs kept(&pool, &ids);
  std::vector<KeptArgs::Rejected> rejected;
  size_t checks = 0;
  for (size_t i = 0; i < objs.size(); ++i) {
    if (!kept.Add(doc.objects[i], i + 1)) continue;
    ++checks;
    for (const auto& r : kept.Check()) rejected.push_back(r);
  }
  for (const auto& r : kept.Check()) rejected.push_back(r);
  EXPECT_GT(checks, 3u);  // the input spans several batches
  ASSERT_EQ(rejected.size(), bad.size());
  for (size_t k = 0; k < bad.size(); ++k) {
    EXPECT_EQ(rejected[k].event_number, bad[k] + 1);
    EXPECT_EQ(rejected[k].where, doc.objects[bad[k]].data());
    EXPECT_EQ(ids[bad[k]], kNoStr);
  }
  ASSERT_EQ(ids.size(), objs.size());
  EXPECT_EQ(pool.Get(ids[0]), "{\"External id\":0,\"Input Dims\":[[4,8],[8,16]]}");
  EXPECT_EQ(pool.Get(ids[39999]), "{\"External id\":39999,\"Input Dims\":[[4,8],[8,16]]}");
  size_t none = 0;
  for (StrId id : ids) none += id == kNoStr;
  EXPECT_EQ(none, bad.size());
}

}  // namespace
}  // namespace truffld::merge::kineto
