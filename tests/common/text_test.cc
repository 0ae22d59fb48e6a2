// The shared UTF-8 rule and JSON escaping (truffld/utf8.h, truffld/json_escape.h).
#include <gtest/gtest.h>

#include <string>

#include "truffld/json_escape.h"
#include "truffld/utf8.h"

namespace truffld {
namespace {

TEST(Utf8, AcceptsShortestFormsOfScalarValues) {
  for (const std::string s : {"a", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80",
                              "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF"}) {
    EXPECT_EQ(Utf8SequenceLength(s, 0), s.size()) << s;
    EXPECT_TRUE(IsValidUtf8(s));
  }
}

TEST(Utf8, RejectsOverlongSurrogateOutOfRangeStrayAndCutSequences) {
  for (const std::string s : {"\x80", "\xBF", "\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xE0\x9F\xBF",
                              "\xED\xA0\x80", "\xED\xBF\xBF", "\xF0\x80\x80\x80", "\xF0\x8F\xBF\xBF",
                              "\xF4\x90\x80\x80", "\xF7\xBF\xBF\xBF", "\xF8\x88\x80\x80\x80", "\xFF",
                              "\xC3", "\xE2\x82", "\xF0\x9F\x98"}) {
    EXPECT_EQ(Utf8SequenceLength(s, 0), 0u) << ::testing::PrintToString(s);
    EXPECT_FALSE(IsValidUtf8(s));
  }
}

TEST(Utf8, RepairReplacesEachBadByteAndKeepsTheRest) {
  std::string ok = "plain \xC3\xA9";
  EXPECT_EQ(RepairUtf8(&ok), 0u);
  EXPECT_EQ(ok, "plain \xC3\xA9");
  std::string bad = "a\xED\xA0\x80" "b\xFF";
  EXPECT_EQ(RepairUtf8(&bad), 4u);
  EXPECT_EQ(bad, "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD");
}

TEST(Utf8, RepairedPrefixNeverCutsACharacter) {
  EXPECT_EQ(RepairedUtf8("ab\xC3\xA9", 3), "ab");          // the two-byte character does not fit
  EXPECT_EQ(RepairedUtf8("ab\xC3\xA9", 4), "ab\xC3\xA9");
  size_t bad = 0;
  EXPECT_EQ(RepairedUtf8("\xFFx", 1, &bad), "\xEF\xBF\xBD");  // one input byte, repaired
  EXPECT_EQ(bad, 1u);
}

TEST(JsonEscape, EscapesQuotesBackslashesControlsAndBadBytes) {
  EXPECT_EQ(JsonEscaped("a\"b\\c\n\r\t\x01\x1f\x7f"), "a\\\"b\\\\c\\n\\r\\t\\u0001\\u001f\x7f");
  EXPECT_EQ(JsonEscaped("\xED\xA0\x80"), "\\ufffd\\ufffd\\ufffd");
  EXPECT_EQ(JsonEscaped("\xF4\x90\x80\x80"), "\\ufffd\\ufffd\\ufffd\\ufffd");
  EXPECT_EQ(JsonEscaped("\xE2\x82\xAC"), "\xE2\x82\xAC");  // valid non-ASCII copied
  std::string lit;
  AppendJsonString(&lit, "x\"");
  EXPECT_EQ(lit, "\"x\\\"\"");
}

TEST(JsonEscape, PlainPrefixFindsTheFirstSpecialByteAtEveryOffset) {
  for (size_t n = 0; n < 40; ++n) {
    const std::string s(n, 'a');
    ASSERT_EQ(JsonPlainPrefix(s.data(), n), n);
    for (size_t pos = 0; pos < n; ++pos)
      for (unsigned char c : {'"', '\\', '\n', '\x01', '\x80', '\xff'}) {
        std::string t = s;
        t[pos] = char(c);
        ASSERT_EQ(JsonPlainPrefix(t.data(), n), pos) << n << " " << pos;
        ASSERT_FALSE(JsonNeedsNoEscape(t));
      }
  }
  EXPECT_TRUE(JsonNeedsNoEscape("plain ascii ~"));
}

// Two special bytes, anywhere, in strings read from any offset: the first from that offset is
// found (the vector scan's last load overlaps bytes it already checked), as a byte loop finds it.
TEST(JsonEscape, PlainPrefixFindsTheFirstOfTwoFromAnyOffset) {
  auto reference = [](const char* p, size_t n) {
    size_t i = 0;
    while (i < n && !JsonSpecialByte(static_cast<unsigned char>(p[i]))) ++i;
    return i;
  };
  int checked = 0;
  for (size_t n = 0; n < 48; ++n)
    for (size_t a = 0; a < n; ++a)
      for (size_t b = a; b < n; ++b) {
        std::string t(n, 'x');
        t[a] = '"';
        t[b] = '\x1f';
        for (size_t from = 0; from <= n; from += 3) {
          ASSERT_EQ(JsonPlainPrefix(t.data() + from, n - from), reference(t.data() + from, n - from))
              << n << " " << a << " " << b << " " << from;
          ++checked;
        }
      }
  EXPECT_GT(checked, 10000);
}

}  // namespace
}  // namespace truffld
