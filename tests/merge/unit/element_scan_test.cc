// ElementScanner and MatchValue: a damaged JSON array cut into elements by its bytes.
#include "importers/kineto/element_scan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <simdjson.h>

namespace truffld::merge::kineto {
namespace {

using Kind = ElementSpan::Kind;

// "E:<text>" per element, "B:<text>" per bad span, "]" for the close, "END" for the end.
std::vector<std::string> Scan(const std::string& doc) {
  simdjson::dom::parser parser;
  ElementScanner scan(doc, doc.find('['), [&parser](std::string_view e) {
    return parser.parse(std::string(e)).error() == simdjson::SUCCESS;
  });
  std::vector<std::string> out;
  for (int guard = 0; guard < 100; ++guard) {
    const ElementSpan s = scan.Next();
    const std::string text = doc.substr(s.begin, s.end - s.begin);
    if (s.kind == Kind::kElement) out.push_back("E:" + text);
    if (s.kind == Kind::kBad) out.push_back(std::string(s.lost ? "B:" : "b:") + text);
    if (s.kind == Kind::kClose) out.push_back("]");
    if (s.kind == Kind::kEnd) out.push_back("END");
    if (s.kind == Kind::kClose || s.kind == Kind::kEnd) break;
  }
  return out;
}

using V = std::vector<std::string>;

TEST(MatchValue, EndsValuesAndRefusesBadBrackets) {
  EXPECT_EQ(MatchValue(R"({"a":"}]",[1,{"b":2}]} x)", 0), 22u);
  EXPECT_EQ(MatchValue(R"("a\"b" x)", 0), 6u);
  EXPECT_EQ(MatchValue("123, 4", 0), 3u);
  size_t stop = 0;
  EXPECT_EQ(MatchValue(R"({"a":1])", 0, &stop), std::string_view::npos);
  EXPECT_EQ(stop, 6u);
  EXPECT_EQ(MatchValue(R"({"a":[1)", 0, &stop), std::string_view::npos);
  EXPECT_EQ(stop, 7u);
  EXPECT_EQ(MatchValue(std::string(2000, '['), 0, &stop), std::string_view::npos);
  EXPECT_EQ(stop, 1024u);
}

TEST(ElementScanner, GoodArraysGiveTheirElements) {
  EXPECT_EQ(Scan(R"({"traceEvents": [ {"a":1} , {"b":[2]}, 3 ]})"), (V{R"(E:{"a":1})", R"(E:{"b":[2]})", "E:3", "]"}));
  EXPECT_EQ(Scan("[]"), (V{"]"}));
  EXPECT_EQ(Scan("[ "), (V{"END"}));
}

TEST(ElementScanner, SkipsOneBadElementAndReadsOn) {
  // A raw tab and a bad UTF-8 byte inside strings: the brackets still say where they end.
  EXPECT_EQ(Scan("[{\"a\":1},{\"b\":\"x\ty\"},{\"c\":3}]"), (V{"E:{\"a\":1}", "B:{\"b\":\"x\ty\"}", "E:{\"c\":3}", "]"}));
  EXPECT_EQ(Scan("[{\"a\":1},{\"b\":\"\xff\"},{\"c\":3}]"), (V{"E:{\"a\":1}", "B:{\"b\":\"\xff\"}", "E:{\"c\":3}", "]"}));
  // A ',' too many.
  EXPECT_EQ(Scan(R"([{"a":1},,{"c":3}])"), (V{R"(E:{"a":1})", "B:,", R"(E:{"c":3})", "]"}));
  // Invalid JSON inside balanced brackets.
  EXPECT_EQ(Scan(R"([{"a":1},{"b":2 "x":1},{"c":3}])"), (V{R"(E:{"a":1})", R"(B:{"b":2 "x":1})", R"(E:{"c":3})", "]"}));
  // No comma between two elements: both read, the gap reported.
  EXPECT_EQ(Scan(R"([{"a":1} {"c":3}])"), (V{R"(E:{"a":1})", "b: ", R"(E:{"c":3})", "]"}));
}

TEST(ElementScanner, ResynchronisesAfterAnElementCutShort) {
  // Cut inside an object: its brackets never close; the next element is found after a ','.
  EXPECT_EQ(Scan(R"([{"a":1},{"b":2,"c":{"d":1}, {"e":5},{"f":6}]})"),
            (V{R"(E:{"a":1})", R"(B:{"b":2,"c":{"d":1})", R"(E:{"e":5})", R"(E:{"f":6})", "]"}));
  // Cut inside a string: the quotes are out of step from there.
  EXPECT_EQ(Scan(R"([{"a":1},{"b":"xy,{"e":5},{"f":6}])"),
            (V{R"(E:{"a":1})", R"(B:{"b":"xy)", R"(E:{"e":5})", R"(E:{"f":6})", "]"}));
  // The last element cut, the array closed after it.
  EXPECT_EQ(Scan(R"({"traceEvents":[{"a":1},{"b":2 ]})"), (V{R"(E:{"a":1})", R"(B:{"b":2 )", "]"}));
  // The document ends inside the last element.
  EXPECT_EQ(Scan(R"([{"a":1},{"b":2,)"), (V{R"(E:{"a":1})", R"(B:{"b":2,)", "END"}));
}

}  // namespace
}  // namespace truffld::merge::kineto
