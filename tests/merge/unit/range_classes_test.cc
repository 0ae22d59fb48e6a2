// RangeClasses (the tree builder's class caches) against the rules themselves, and the
// number-blindness test that decides whether numbered names may share one answer.
#include "core/range_classes.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "truffld/merge/regex_prefilter.h"

namespace truffld::merge {
namespace {

TEST(RegexNumberBlind, AcceptsWhatTreatsDigitsAlike) {
  for (const char* re : {"", "^aten::", "[^a-z0-9]", "^[A-Za-z_][A-Za-z0-9_]*::", "\\d+", "x{3}", "y{2,}",
                         "z{2,5}", "request_ids:((?:[^\\]\\\\]|\\\\.)*)", "^execute_([0-9]+_)?context_[0-9]+",
                         "\\bsend\\b", "[[:digit:]]", "a.b", "^c10d::|^record_param_comms|^gloo:",
                         "x|^ab12", "(a|b)[0-9]"})
    EXPECT_TRUE(RegexNumberBlind(re)) << re;
}

TEST(RegexNumberBlind, RefusesWhatCanTellDigitsApart) {
  for (const char* re : {"op_id = 1", "[1-9]", "[0-8]", "(\\d)\\1", "\\0", "\\x31", "\\u0031", "[+-0]",
                         "[0-9-A]", "[!-0-9]", "{,5}", "a{1,2,3}", "[]1]", "[^]1]", "v{2}3", "^c10, d",
                         "^a1+", "(^c10d)", "c10d::", "x|ab12"})
    EXPECT_FALSE(RegexNumberBlind(re)) << re;
}

TEST(RulesNumberBlind, DefaultsAreAndADigitRuleOrRequestRegexIsNot) {
  EXPECT_TRUE(Rules::Defaults().NumberBlind());
  auto user = Rules::FromJson(R"({"rules":[{"layer":"comm","name_regex":"op_id = 1\\b"}]})", "t");
  ASSERT_TRUE(user.ok());
  EXPECT_FALSE(user->NumberBlind());
  auto req = Rules::FromJson(R"j({"request_regex":"req(7[0-9]*)"})j", "t");
  ASSERT_TRUE(req.ok());
  EXPECT_FALSE(req->NumberBlind());
}

// Every answer of RangeClasses equals the rules' own, for the layer LayerOf gave and for another.
void ExpectSameAsRules(const Rules& rules, const std::vector<std::string>& names, RangeClasses* rc,
                       StringPool* pool, StrId domain, StrId category) {
  for (const std::string& n : names) {
    const ClassKey k{pool->Intern(n), domain, category};
    RangeClasses::Source src;
    const Layer layer = rc->LayerOf(k, &src);
    const Layer want = rules.Classify(n, pool->Get(domain), pool->Get(category));
    ASSERT_EQ(layer, want) << n;
    for (Layer final_layer : {layer, Layer::kOther, Layer::kFrontend}) {
      const RangeClass& c = rc->ClassFor(k, final_layer, src);
      EXPECT_EQ(c.layer, final_layer) << n;
      EXPECT_EQ(pool->Get(c.family), NormaliseFamily(final_layer, n)) << n << " as " << LayerName(final_layer);
      EXPECT_EQ(c.requests, rules.ParseRequests(n)) << n;
    }
  }
}

std::vector<std::string> NumberedNames(uint32_t seed) {
  std::mt19937 rng(seed);
  const char* bases[] = {"aten::mm", "_C::rms_norm", "vllm::unified_attention_with_output", "torch.nn.functional.linear f.py:12",
                         "ncclAllReduce", "nccl:all_reduce", "step_execute_model[request_ids:4_5]", "x", "Linear.forward",
                         "foo1", "all_reduce_7", "", " lead"};
  // Two numbers each, or none (the last: nothing numbered, so by name).
  const char* suffixes[] = {", seq = %u, op_id = %u", ", bytes=%u, world_size=%u", ", %u, %u",
                            ", request_ids:%u_%u]", ", seq = %u, x%u", ", no digits"};
  std::vector<std::string> out;
  for (int i = 0; i < 3000; ++i) {
    char buf[128];
    const size_t s = rng() % std::size(suffixes);
    const unsigned a = unsigned(rng() % 100000), b = unsigned(rng() % 1000);
    if (s + 1 == std::size(suffixes)) std::snprintf(buf, sizeof buf, "%s", suffixes[s]);
    else std::snprintf(buf, sizeof buf, suffixes[s], a, b);
    out.push_back(std::string(bases[rng() % std::size(bases)]) + buf);
    if (i % 7 == 0) out.push_back(out[rng() % out.size()]);  // repeats, for the by-name cache
  }
  return out;
}

TEST(RangeClasses, NumberedNamesShareAShapeAndGetTheRulesAnswers) {
  const Rules rules = Rules::Defaults();
  StringPool pool;
  RangeClasses rc(rules, pool);
  const StrId none = pool.Intern("");
  ExpectSameAsRules(rules, NumberedNames(1), &rc, &pool, none, none);
  ExpectSameAsRules(rules, NumberedNames(2), &rc, &pool, pool.Intern("NCCL"), none);
  ExpectSameAsRules(rules, NumberedNames(3), &rc, &pool, none, pool.Intern("cpu_op"));
  EXPECT_GT(rc.by_shape_hits(), 4000u);  // the shape cache does the work it is there for
  EXPECT_GT(rc.by_name_hits(), 100u);
}

TEST(RangeClasses, FullCachesChangeNoAnswer) {
  // Small caches: by name fills first, so later numbered names are served by their shape (and
  // ClassFor goes back there), and once both are full, by the rules directly.
  const Rules rules = Rules::Defaults();
  for (size_t cap : {size_t{0}, size_t{1}, size_t{8}, size_t{40}}) {
    StringPool pool;
    RangeClasses rc(rules, pool, cap);
    const StrId none = pool.Intern("");
    ExpectSameAsRules(rules, NumberedNames(5), &rc, &pool, none, none);
    ExpectSameAsRules(rules, NumberedNames(6), &rc, &pool, pool.Intern("PyTorch"), none);
    if (cap >= 8) { EXPECT_GT(rc.by_shape_hits(), 100u) << cap; }
    if (cap == 0) { EXPECT_EQ(rc.by_shape_hits() + rc.by_name_hits(), 0u); }
  }
}

TEST(RangeClasses, RulesThatReadDigitsGetNoSharing) {
  auto rules = Rules::FromJson(R"({"rules":[{"layer":"comm","name_regex":"op_id = 1\\b"},
                                            {"layer":"step","name_regex":"seq = [0-4]"}]})", "t");
  ASSERT_TRUE(rules.ok());
  StringPool pool;
  RangeClasses rc(*rules, pool);
  const StrId none = pool.Intern("");
  ExpectSameAsRules(*rules, {"aten::mm, op_id = 1", "aten::mm, op_id = 2", "aten::mm, seq = 3", "aten::mm, seq = 7"},
                    &rc, &pool, none, none);
  ExpectSameAsRules(*rules, NumberedNames(4), &rc, &pool, none, none);
  EXPECT_EQ(rc.by_shape_hits(), 0u);
}

TEST(RangeClasses, ANameBeyondTheShapeLimitIsStillClassified) {
  const Rules rules = Rules::Defaults();
  StringPool pool;
  RangeClasses rc(rules, pool);
  const StrId none = pool.Intern("");
  const std::string longer = "aten::" + std::string(RangeClasses::kMaxShapedName, 'a');
  ExpectSameAsRules(rules, {longer + ", op_id = 1", longer + ", op_id = 2"}, &rc, &pool, none, none);
  EXPECT_EQ(rc.by_shape_hits(), 0u);
}

}  // namespace
}  // namespace truffld::merge
