// The event model's side tables: shared extras records (ExtraInterner) and the per-file thread
// table that Event::thread indexes (ThreadTable, TraceFile::SortThreads).
#include "truffld/merge/event.h"
#include "truffld/merge/import.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace truffld::merge {
namespace {

// Equal extras records share one index; a record differing from another in any one field gets
// its own, also after the table has grown many times and after Release (which only forgets
// what can be shared: indices already given stay valid).
TEST(ExtraInterner, SharesEqualRecordsAndSeparatesEveryField) {
  std::vector<EventExtra> variants;
  for (int k = 0; k < 18; ++k) {
    EventExtra x;
    x.bytes = 4096;
    x.grid[0] = 128;
    switch (k) {
      case 0: break;
      case 1: x.range_id = 1; break;
      case 2: x.graph_id = 1; break;
      case 3: x.graph_node_id = 1; break;
      case 4: x.original_graph_node_id = 1; break;
      case 5: x.bytes = 4097; break;
      case 6: x.grid[1] = 2; break;
      case 7: x.grid[2] = 2; break;
      case 8: x.block[0] = 2; break;
      case 9: x.block[2] = 2; break;
      case 10: x.copy_kind = 3; break;
      case 11: x.payload = 3; break;
      case 12: x.return_code = 700; break;
      case 13: x.grid[0] = 129; break;
      case 14: x.stream = 7; break;
      case 15: x.cbid = 211; break;
      case 16: x.category = 3; break;
      case 17: x.SetDevice(1); break;
    }
    variants.push_back(x);
  }
  TraceFile f;
  std::vector<uint32_t> first;
  for (const EventExtra& x : variants) {
    Event e;
    f.SetExtra(e, x);
    first.push_back(e.extra);
  }
  std::vector<uint32_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end());  // all distinct
  for (int i = 0; i < 100000; ++i) {  // grow the table: many distinct records
    EventExtra x;
    x.range_id = 1000 + i;
    Event e;
    f.SetExtra(e, x);
  }
  for (size_t k = 0; k < variants.size(); ++k) {
    Event e;
    f.SetExtra(e, variants[k]);
    EXPECT_EQ(e.extra, first[k]);  // the record given the first time
    EXPECT_EQ(f.Extra(e), variants[k]);
  }
  EXPECT_EQ(f.extras.size(), variants.size() + 100000);  // nothing added twice
  Event none;
  f.SetExtra(none, EventExtra{});
  EXPECT_EQ(none.extra, kNoExtra);  // all defaults: no record
  f.extra_interner.Release(f.extras);
  Event again;
  f.SetExtra(again, variants[3]);
  EXPECT_EQ(f.Extra(again), variants[3]);
  EXPECT_EQ(f.extras.size(), variants.size() + 100001);  // a new record after Release
}

// Records met in turns (a thread's API calls and the kernels they launch), as the importers
// meet them: the same record always gets the same index, whether found among the last answers
// or in the table, and Release ends sharing with what came before it.
TEST(ExtraInterner, RecordsInTurnsKeepTheirIndices) {
  std::vector<EventExtra> records(10);
  for (int k = 0; k < 10; ++k) {
    records[k].cbid = k < 5 ? 211 : -1;
    records[k].return_code = k < 5 ? k : 0;
    records[k].stream = 7;
    records[k].grid[0] = k < 5 ? 0 : 100 + k;
    records[k].bytes = k % 5 == 4 ? 1 << k : kNone;
  }
  TraceFile f;
  std::vector<uint32_t> index(records.size(), kNoExtra);
  std::mt19937 rng(3);
  for (int i = 0; i < 20000; ++i) {
    const size_t k = i % 3 == 2 ? rng() % records.size() : (i % 2 ? 5 + i % 3 : i % 4);  // turns, then jumps
    Event e;
    f.SetExtra(e, records[k]);
    if (index[k] == kNoExtra) index[k] = e.extra;
    ASSERT_EQ(e.extra, index[k]) << "step " << i << " record " << k;
    ASSERT_EQ(f.Extra(e), records[k]);
  }
  EXPECT_EQ(f.extras.size(), records.size());
  Event last;
  f.SetExtra(last, records[2]);  // among the last answers
  f.extra_interner.Release(f.extras);
  Event after;
  f.SetExtra(after, records[2]);
  EXPECT_NE(after.extra, last.extra);  // not shared across Release
  EXPECT_EQ(f.extras.size(), records.size() + 1);
}

TEST(ThreadTable, IndexIsStableAndZeroIsNoThread) {
  ThreadTable t;
  EXPECT_EQ(t.Index(kNone, kNone), 0u);
  const uint32_t a = t.Index(7, 70), b = t.Index(7, 71), c = t.Index(8, kNone);
  EXPECT_EQ(a, 1u); EXPECT_EQ(b, 2u); EXPECT_EQ(c, 3u);
  EXPECT_EQ(t.Index(7, 70), a);  // not the last one asked: found through the table
  EXPECT_EQ(t.Index(8, kNone), c);
  for (int i = 0; i < 9; ++i) {  // in turns (the last two answers), then a third
    EXPECT_EQ(t.Index(7, 70), a);
    EXPECT_EQ(t.Index(8, kNone), c);
    if (i % 3 == 2) {
      EXPECT_EQ(t.Index(7, 71), b);
    }
  }
  EXPECT_EQ(t[b].process_id, 7); EXPECT_EQ(t[b].thread_id, 71);
  EXPECT_EQ(t.size(), 4u);
  EXPECT_TRUE(t.sorted());  // first seen in (process, thread) order
  EXPECT_TRUE(t.Sort().empty());
}

// Many threads first seen in random order, with hostile ids (negative, extreme): every pair
// keeps one index until Sort, which orders the table by (process, thread) and returns a map
// that SortThreads applies to the events; lookups after the sort find the new indices.
TEST(ThreadTable, SortOrdersByProcessThenThreadAndRenumbersEvents) {
  std::mt19937_64 rng(5);
  std::vector<HostThread> pairs;
  for (int i = 0; i < 5000; ++i)
    pairs.push_back({int64_t(rng() % 50) - 3, i % 7 == 0 ? INT64_MIN + i : int64_t(rng())});
  pairs.push_back({INT64_MAX, INT64_MAX});
  pairs.push_back({-2, kNone});
  TraceFile f;
  for (const HostThread& p : pairs) {
    Event e;
    f.SetThread(e, p.process_id, p.thread_id);
    e.start = static_cast<TimeNs>(f.events.size());
    f.events.push_back(e);
    f.events.push_back(e);  // twice: the same index
    EXPECT_EQ(f.events[f.events.size() - 1].thread, f.events[f.events.size() - 2].thread);
  }
  EXPECT_FALSE(f.threads.sorted());
  const size_t n = f.threads.size();
  EXPECT_FALSE(f.SortThreads().empty());
  EXPECT_TRUE(f.threads.sorted());
  EXPECT_EQ(f.threads.size(), n);
  for (uint32_t i = 1; i < f.threads.size(); ++i) EXPECT_LT(f.threads[i - 1], f.threads[i]);
  for (size_t k = 0; k < pairs.size(); ++k) {
    const Event& e = f.events[2 * k];
    EXPECT_EQ(f.ProcessOf(e), pairs[k].process_id);
    EXPECT_EQ(f.ThreadIdOf(e), pairs[k].thread_id);
    EXPECT_EQ(f.threads.Index(pairs[k].process_id, pairs[k].thread_id), e.thread);
  }
  EXPECT_EQ(f.threads.size(), n);  // lookups after the sort added nothing
  EXPECT_TRUE(f.SortThreads().empty());  // already in order: nothing moves
  Event e = f.events[0];
  f.SetProcess(e, 12345);  // keeps the thread id, changes the process
  EXPECT_EQ(f.ProcessOf(e), 12345);
  EXPECT_EQ(f.ThreadIdOf(e), pairs[0].thread_id);
}


// Event keeps the thread index in 24 bits beside the kind: the largest index must survive
// next to every kind, and a table that is full must neither grow nor lose the pairs it holds.
TEST(ThreadTable, LargestIndexFitsBesideTheKind) {
  Event e;
  e.thread = Event::kMaxThreads - 1;
  e.kind = EventKind::kGraphNode;
  EXPECT_EQ(e.thread, Event::kMaxThreads - 1);
  EXPECT_EQ(e.kind, EventKind::kGraphNode);
  e.kind = EventKind::kNvtxPush;  // 0: must not clear the thread's bits either
  EXPECT_EQ(e.thread, Event::kMaxThreads - 1);
}

TEST(ThreadTable, PairsBeyondTheCapacityAreCountedAndFailTheImport) {
  TraceFile f;
  f.meta.path = "many_threads.jsonl";
  f.threads = ThreadTable(8);  // (kNone, kNone) and seven more
  std::vector<uint32_t> index;
  for (int t = 0; t < 7; ++t) index.push_back(f.threads.Index(1, 100 - t));  // unsorted on purpose
  EXPECT_EQ(f.threads.size(), 8u);
  EXPECT_EQ(f.threads.overflowed(), 0u);
  EXPECT_TRUE(ThreadCapacityStatus(f).ok());
  EXPECT_EQ(f.threads.Index(2, 1), 0u);  // full: a new pair is not added
  EXPECT_EQ(f.threads.Index(2, 2), 0u);
  EXPECT_EQ(f.threads.size(), 8u);
  EXPECT_EQ(f.threads.overflowed(), 2u);
  for (int t = 0; t < 7; ++t) EXPECT_EQ(f.threads.Index(1, 100 - t), index[t]);  // still found
  EXPECT_FALSE(f.threads.Sort().empty());  // the index is rebuilt at the next lookup
  for (int t = 0; t < 7; ++t) EXPECT_EQ(f.threads[f.threads.Index(1, 100 - t)].thread_id, 100 - t);
  EXPECT_EQ(f.threads.Index(3, 3), 0u);
  EXPECT_EQ(f.threads.overflowed(), 3u);
  const Status s = ThreadCapacityStatus(f);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("many_threads.jsonl"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("more than 7 distinct (process_id, thread_id) pairs (3 records"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace truffld::merge
