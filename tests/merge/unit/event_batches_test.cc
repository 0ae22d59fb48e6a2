// EventBatches: where traceEvents is cut into batches, the brackets put in place and taken out.
#include "importers/kineto/event_batches.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace truffld::merge::kineto {
namespace {

// Every batch's text, in order, until Next() returns nullopt; `*ended` says whether the last
// one closed the array (false: no cut was found).
std::vector<std::string> Cut(std::string* doc, size_t target, bool* ended = nullptr) {
  const size_t open = doc->find('[');
  EventBatches batches(doc->data(), doc->size(), open, target);
  std::vector<std::string> out;
  bool last = false;
  EventBatches::Batch b;
  while (batches.Next(&b) == EventBatches::Step::kBatch) {
    out.emplace_back(doc->substr(b.begin, b.end - b.begin));
    last = b.last;
  }
  if (ended) *ended = last;
  return out;
}

TEST(EventBatches, CutsBetweenElementsAndPutsEveryByteBack) {
  const std::string original = "{\"traceEvents\": [{\"a\":1}, {\"b\":{\"c\":2}},\n  {\"d\":3}], \"x\":1}";
  std::string doc = original;
  bool ended = false;
  // A target of one byte cuts after every element.
  EXPECT_EQ(Cut(&doc, 1, &ended),
            (std::vector<std::string>{"[{\"a\":1}]", "[ {\"b\":{\"c\":2}}]", "[\n  {\"d\":3}]"}));
  EXPECT_TRUE(ended);
  EXPECT_EQ(doc, original);  // the destructor restored the commas
}

TEST(EventBatches, ABatchRunsToTheFirstCutPastItsTarget) {
  std::string doc = "{\"traceEvents\":[{\"a\":1},{\"a\":2},{\"a\":3},{\"a\":4}]}";
  // Batches start at offsets 15, 23 and 39; 10 bytes from 15 fall inside the second element.
  EXPECT_EQ(Cut(&doc, 10), (std::vector<std::string>{"[{\"a\":1},{\"a\":2}]", "[{\"a\":3},{\"a\":4}]"}));
  // A target past the end: the whole array in one batch.
  EXPECT_EQ(Cut(&doc, 1000), (std::vector<std::string>{"[{\"a\":1},{\"a\":2},{\"a\":3},{\"a\":4}]"}));
}

TEST(EventBatches, EmptyArrayIsOneBatch) {
  std::string doc = "{\"traceEvents\": [ \n ], \"a\": [{},{}]}";
  bool ended = false;
  EXPECT_EQ(Cut(&doc, 1, &ended), (std::vector<std::string>{"[ \n ]"}));
  EXPECT_TRUE(ended);
}

TEST(EventBatches, NoCutMeansNoBatch) {
  std::string doc = "{\"traceEvents\": [1, 2, 3]}";  // no element is an object
  bool ended = true;
  EXPECT_TRUE(Cut(&doc, 1, &ended).empty());
  EXPECT_FALSE(ended);
}

TEST(EventBatches, LooksAtBytesOnlySoACutCanFallInsideAStringOrANestedArray) {
  // The caller parses each batch and reads the document whole when one is not valid JSON.
  std::string doc = "{\"traceEvents\": [{\"n\":\"}, {\"}, {\"l\":[{},{}]}]}";
  const std::string original = doc;
  std::vector<std::string> batches = Cut(&doc, 1);
  ASSERT_FALSE(batches.empty());
  EXPECT_EQ(batches[0], "[{\"n\":\"}]");  // inside the string: not valid JSON
  EXPECT_EQ(doc, original);
}

TEST(EventBatches, ACutPastTheArrayLandsInTheMembersAfterIt) {
  // The reader notices that the array closed inside the batch and stops there.
  std::string doc = "{\"traceEvents\": [{\"a\":1}], \"deviceProperties\": [{\"id\":0}, {\"id\":1}]}";
  EXPECT_EQ(Cut(&doc, 5), (std::vector<std::string>{"[{\"a\":1}]"}));  // the `}]` after the element
  EXPECT_EQ(Cut(&doc, 12),
            (std::vector<std::string>{"[{\"a\":1}], \"deviceProperties\": [{\"id\":0}]", "[ {\"id\":1}]"}));
}

TEST(EventBatches, RestoreIsIdempotentAndNextStopsAfterTheLast) {
  std::string doc = "[{},{},{}]";
  const std::string original = doc;
  EventBatches batches(doc.data(), doc.size(), 0, 1);
  EventBatches::Batch b;
  ASSERT_EQ(batches.Next(&b), EventBatches::Step::kBatch);
  ASSERT_EQ(batches.Next(&b), EventBatches::Step::kBatch);
  EXPECT_EQ(doc, "[{}[{}]{}]");  // the first batch's ']' became the second's '['
  ASSERT_EQ(batches.Next(&b), EventBatches::Step::kBatch);
  EXPECT_TRUE(b.last);
  EXPECT_EQ(batches.Next(&b), EventBatches::Step::kNone);
  batches.Restore();
  batches.Restore();
  EXPECT_EQ(doc, original);
}

// A window on the document, as a streamed read holds it: a cut whose bytes run past the window
// is not decided until more come, and offsets follow the window as it moves.
TEST(EventBatches, AWindowAsksForMoreAndFollowsTheMove) {
  const std::string full = "{\"traceEvents\":[{\"a\":1},{\"a\":2},{\"a\":3}],\"x\":0}";
  std::string window = full.substr(0, 24);  // ends right after the first element's '}'
  EventBatches batches(window.data(), window.size(), 15, 1, /*complete=*/false);
  EventBatches::Batch b;
  ASSERT_EQ(batches.Next(&b), EventBatches::Step::kNeedMore);  // '}' then nothing: undecided
  window = full.substr(0, 30);
  batches.Moved(window.data(), window.size(), 0, false);
  ASSERT_EQ(batches.Next(&b), EventBatches::Step::kBatch);
  EXPECT_EQ(window.substr(b.begin, b.end - b.begin), "[{\"a\":1}]");
  ASSERT_EQ(batches.Next(&b), EventBatches::Step::kNeedMore);
  // The caller drops what comes before the next batch and holds the rest of the document.
  const size_t drop = batches.needed_from();
  EXPECT_EQ(drop, 23u);
  window = full.substr(drop);
  window[0] = '[';  // the bytes it held, changed as the batches left them
  batches.Moved(window.data(), window.size(), drop, true);
  ASSERT_EQ(batches.Next(&b), EventBatches::Step::kBatch);
  EXPECT_EQ(window.substr(b.begin, b.end - b.begin), "[{\"a\":2}]");
  ASSERT_EQ(batches.Next(&b), EventBatches::Step::kBatch);
  EXPECT_EQ(window.substr(b.begin, b.end - b.begin), "[{\"a\":3}]");
  EXPECT_TRUE(b.last);
  batches.Restore();
  EXPECT_EQ(window, full.substr(drop));  // the commas still held are back
}

}  // namespace
}  // namespace truffld::merge::kineto
