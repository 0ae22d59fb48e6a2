// PageRecycler: blocks are aligned and usable, freed pages are handed on (their old contents
// prove it), untouched units are not cached, and bookkeeping holds under threads.
#include "truffld/page_recycler.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <sys/mman.h>

#include <thread>
#include <vector>

namespace truffld {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Allocates a block of each size (MiB), fills it with its byte, and frees them all in order:
// their pages end up cached.
void CacheFilled(PageRecycler& r, std::initializer_list<std::pair<size_t, char>> blocks) {
  std::vector<char*> got;
  for (const auto& [mib, fill] : blocks) {
    char* p = static_cast<char*>(r.Allocate(mib * kMiB));
    ASSERT_NE(p, nullptr);
    std::memset(p, fill, mib * kMiB);
    got.push_back(p);
  }
  for (char* p : got) ASSERT_TRUE(r.Free(p));
}

class PageRecyclerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PageRecycler::Enabled()) GTEST_SKIP() << "no mremap on this system";
  }
};

TEST_F(PageRecyclerTest, RefusesSmallRequestsAndUnknownPointers) {
  PageRecycler r;
  EXPECT_EQ(r.Allocate(PageRecycler::kMinBlock - 1), nullptr);
  EXPECT_EQ(r.Allocate(0), nullptr);
  EXPECT_EQ(r.Allocate(SIZE_MAX), nullptr);
  int local = 0;
  EXPECT_FALSE(r.Free(&local));
  EXPECT_FALSE(r.Free(nullptr));
  EXPECT_EQ(r.stats().blocks, 0u);
}

TEST_F(PageRecyclerTest, BlocksAreAlignedRoundedAndWritable) {
  PageRecycler r;
  char* p = static_cast<char*>(r.Allocate(5 * kMiB));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % PageRecycler::kUnit, 0u);
  std::memset(p, 0x5A, 6 * kMiB);  // rounded up to whole units: 6 MiB are usable
  EXPECT_TRUE(r.Owns(p));
  EXPECT_EQ(r.stats().live_bytes, 6 * kMiB);
  EXPECT_EQ(r.stats().fresh_bytes, 6 * kMiB);
  EXPECT_TRUE(r.Free(p));
  EXPECT_FALSE(r.Owns(p));
  EXPECT_FALSE(r.Free(p));  // a second free is refused, not double-cached
  EXPECT_EQ(r.stats().live_bytes, 0u);
  EXPECT_EQ(r.stats().cached_bytes, 6 * kMiB);
}

TEST_F(PageRecyclerTest, FreedPagesAreHandedOnWithTheirContents) {
  PageRecycler r;
  char* a = static_cast<char*>(r.Allocate(8 * kMiB));
  ASSERT_NE(a, nullptr);
  for (size_t i = 0; i < 8 * kMiB; i += 4096) a[i] = char(i / 4096 % 251);
  ASSERT_TRUE(r.Free(a));
  // A smaller block is split from the cached span: the same pages, not fresh zeroed ones.
  char* b = static_cast<char*>(r.Allocate(4 * kMiB));
  ASSERT_NE(b, nullptr);
  for (size_t i = 0; i < 4 * kMiB; i += 4096) ASSERT_EQ(b[i], char(i / 4096 % 251)) << i;
  EXPECT_EQ(r.stats().recycled_bytes, 4 * kMiB);
  EXPECT_EQ(r.stats().fresh_bytes, 8 * kMiB);  // nothing new reserved
  EXPECT_EQ(r.stats().cached_bytes, 4 * kMiB);
  ASSERT_TRUE(r.Free(b));
}

TEST_F(PageRecyclerTest, LargerBlockIsBuiltFromCachedSpansThenFreshPages) {
  PageRecycler r;
  ASSERT_NO_FATAL_FAILURE(CacheFilled(r, {{4, 'a'}, {6, 'b'}}));
  // 12 MiB: no cached span is that large, so both move to the front (largest first), 2 MiB fresh.
  char* c = static_cast<char*>(r.Allocate(12 * kMiB));
  ASSERT_NE(c, nullptr);
  for (size_t i = 0; i < 6 * kMiB; i += 4096) ASSERT_EQ(c[i], 'b') << i;
  for (size_t i = 6 * kMiB; i < 10 * kMiB; i += 4096) ASSERT_EQ(c[i], 'a') << i;
  for (size_t i = 10 * kMiB; i < 12 * kMiB; i += 4096) ASSERT_EQ(c[i], 0) << i;  // fresh
  std::memset(c, 'c', 12 * kMiB);  // the whole block is mapped and writable
  const PageRecycler::Stats st = r.stats();
  EXPECT_EQ(st.recycled_bytes, 10 * kMiB);
  EXPECT_EQ(st.fresh_bytes, 4 * kMiB + 6 * kMiB + 2 * kMiB);
  EXPECT_EQ(st.cached_bytes, 0u);
  ASSERT_TRUE(r.Free(c));
}

TEST_F(PageRecyclerTest, CachedSpansLargerThanTheRequestInTotalAreOnlyPartlyMoved) {
  PageRecycler r;
  ASSERT_NO_FATAL_FAILURE(CacheFilled(r, {{4, '0'}, {4, '1'}, {4, '2'}}));
  // 6 MiB from three cached 4 MiB spans: one whole, half of another; the rest stays cached.
  char* c = static_cast<char*>(r.Allocate(6 * kMiB));
  ASSERT_NE(c, nullptr);
  std::memset(c, 'x', 6 * kMiB);
  EXPECT_EQ(r.stats().recycled_bytes, 6 * kMiB);
  EXPECT_EQ(r.stats().cached_bytes, 6 * kMiB);
  // What is still cached is intact: it serves the next blocks with its old contents.
  char* d = static_cast<char*>(r.Allocate(4 * kMiB));
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d[0], 'x');
  ASSERT_TRUE(r.Free(c));
  ASSERT_TRUE(r.Free(d));
}

TEST_F(PageRecyclerTest, UntouchedUnitsAreNotCached) {
  PageRecycler r;
  char* p = static_cast<char*>(r.Allocate(16 * kMiB));
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, 2 * kMiB);            // unit 0
  std::memset(p + 8 * kMiB, 1, 4096);     // one page of unit 4
  ASSERT_TRUE(r.Free(p));
  EXPECT_EQ(r.stats().cached_bytes, 4 * kMiB);
  r.Trim();
  EXPECT_EQ(r.stats().cached_bytes, 0u);
  // After a trim everything is fresh again.
  char* q = static_cast<char*>(r.Allocate(4 * kMiB));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(r.stats().recycled_bytes, 0u);
  ASSERT_TRUE(r.Free(q));
}

TEST_F(PageRecyclerTest, CacheIsCapped) {
  PageRecycler r(/*huge_pages=*/true, /*max_cached_bytes=*/6 * kMiB);
  char* a = static_cast<char*>(r.Allocate(4 * kMiB));
  char* b = static_cast<char*>(r.Allocate(8 * kMiB));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::memset(a, 1, 4 * kMiB);
  std::memset(b, 2, 8 * kMiB);
  ASSERT_TRUE(r.Free(a));
  EXPECT_EQ(r.stats().cached_bytes, 4 * kMiB);
  ASSERT_TRUE(r.Free(b));  // only 2 MiB of it fit under the cap
  EXPECT_EQ(r.stats().cached_bytes, 6 * kMiB);
  char* c = static_cast<char*>(r.Allocate(8 * kMiB));
  ASSERT_NE(c, nullptr);
  std::memset(c, 3, 8 * kMiB);
  EXPECT_EQ(r.stats().recycled_bytes, 6 * kMiB);
  ASSERT_TRUE(r.Free(c));
}

// Every byte of [p, p + n) is mapped (madvise fails with ENOMEM over a hole).
bool Mapped(void* p, size_t n) { return madvise(p, n, MADV_NORMAL) == 0; }

TEST_F(PageRecyclerTest, BlocksBuiltFromSeveralSpansMoveAgainWhole) {
  PageRecycler r;
  ASSERT_NO_FATAL_FAILURE(CacheFilled(r, {{4, 'a'}, {6, 'b'}}));
  char* c = static_cast<char*>(r.Allocate(12 * kMiB));  // three mappings: b's, a's, fresh
  ASSERT_NE(c, nullptr);
  std::memset(c, 'c', 12 * kMiB);
  ASSERT_TRUE(r.Free(c));
  // The cached span now crosses mapping boundaries; moving it must not leave a hole.
  char* d = static_cast<char*>(r.Allocate(16 * kMiB));
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(Mapped(d, 16 * kMiB));
  for (size_t i = 0; i < 12 * kMiB; i += 4096) ASSERT_EQ(d[i], 'c') << i;
  std::memset(d, 'd', 16 * kMiB);
  EXPECT_EQ(r.stats().recycled_bytes, 10 * kMiB + 12 * kMiB);
  ASSERT_TRUE(r.Free(d));
}

// Moves that fail as kernels before 6.17 fail (destination unmapped first) or leave everything
// as it was: the block comes back whole, or not at all, and the recycler stays usable.
int g_moves = 0, g_fail_at = -1;
bool g_unmap_first = false;
void* FlakyMove(void* old_address, size_t old_size, size_t new_size, int flags, void* new_address) {
  if (g_moves++ == g_fail_at) {
    if (g_unmap_first) munmap(new_address, new_size);
    return MAP_FAILED;
  }
  return mremap(old_address, old_size, new_size, flags, new_address);
}

TEST_F(PageRecyclerTest, AFailedMoveLeavesNoHoleAndNoSharedPages) {
  for (bool unmap_first : {true, false}) {
    SCOPED_TRACE(unmap_first ? "destination unmapped, then failed" : "failed, nothing changed");
    g_moves = 0;
    g_fail_at = 1;  // the second unit
    g_unmap_first = unmap_first;
    PageRecycler r(true, PageRecycler::kDefaultMaxCachedBytes, FlakyMove);
    char* a = static_cast<char*>(r.Allocate(6 * kMiB));
    ASSERT_NE(a, nullptr);
    std::memset(a, 'a', 6 * kMiB);
    ASSERT_TRUE(r.Free(a));
    char* b = static_cast<char*>(r.Allocate(8 * kMiB));
    if (unmap_first) {
      // The hole was free: mapped anew, the block whole (2 MiB moved, the rest fresh).
      ASSERT_NE(b, nullptr);
      ASSERT_TRUE(Mapped(b, 8 * kMiB));
      std::memset(b, 'b', 8 * kMiB);
      EXPECT_EQ(r.stats().recycled_bytes, 2 * kMiB);
      EXPECT_EQ(r.stats().fresh_bytes, 6 * kMiB + 6 * kMiB);
      ASSERT_TRUE(r.Free(b));
    } else {
      // Whether the unit there is still the reservation cannot be told from another mapping:
      // the block is given up (the caller falls back to malloc).
      EXPECT_EQ(b, nullptr);
      EXPECT_EQ(r.stats().recycled_bytes, 0u);
      EXPECT_EQ(r.stats().live_bytes, 0u);
    }
    // The unit that failed is dropped; the third is still cached (with b, where b was made).
    EXPECT_EQ(r.stats().cached_bytes, unmap_first ? 10 * kMiB : 2 * kMiB);
    char* c = static_cast<char*>(r.Allocate(4 * kMiB));
    ASSERT_NE(c, nullptr);
    ASSERT_TRUE(Mapped(c, 4 * kMiB));
    std::memset(c, 'c', 4 * kMiB);
    ASSERT_TRUE(r.Free(c));
  }
}

TEST_F(PageRecyclerTest, ThreadsShareOneRecycler) {
  PageRecycler r;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&r, t] {
      for (int i = 0; i < 20; ++i) {
        const size_t n = (4 + size_t((t + i) % 5)) * kMiB;
        char* p = static_cast<char*>(r.Allocate(n));
        if (!p) continue;
        std::memset(p, t, n);
        for (size_t k = 0; k < n; k += 4096) ASSERT_EQ(p[k], char(t));
        ASSERT_TRUE(r.Free(p));
      }
    });
  }
  for (auto& th : threads) th.join();
  const PageRecycler::Stats st = r.stats();
  EXPECT_EQ(st.blocks, 80u);
  EXPECT_EQ(st.live_bytes, 0u);
  EXPECT_GT(st.recycled_bytes, 0u);
}

}  // namespace
}  // namespace truffld
