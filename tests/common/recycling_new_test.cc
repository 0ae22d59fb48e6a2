// The operator new/delete of truffld_recycling_new: large blocks come from the page recycler
// (2 MiB-aligned, their pages handed on when freed), small ones from malloc, and
// TRUFFLD_PAGE_RECYCLING=0 turns it off (a second ctest entry runs the Disabled test with it).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "truffld/page_recycler.h"

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

constexpr size_t kBig = size_t{8} << 20;

bool Off() {
  const char* env = std::getenv("TRUFFLD_PAGE_RECYCLING");
  return env && std::string(env) == "0";
}

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % truffld::PageRecycler::kUnit == 0; }

TEST(RecyclingNew, LargeBlocksAreRecycled) {
  if (kSanitized || Off() || !truffld::PageRecycler::Enabled()) GTEST_SKIP() << "recycling off here";
  std::unique_ptr<unsigned char[]> a(new unsigned char[kBig]);
  ASSERT_TRUE(Aligned(a.get()));
  std::memset(a.get(), 0xA7, kBig);
  a.reset();
  // The next large block gets those pages back, contents and all (fresh pages read as zero).
  std::unique_ptr<unsigned char[]> b(new unsigned char[kBig]);
  ASSERT_TRUE(Aligned(b.get()));
  EXPECT_EQ(b[0], 0xA7);
  EXPECT_EQ(b[kBig - 1], 0xA7);
}

TEST(RecyclingNew, ContainersWorkAcrossSizes) {
  // Vectors growing through the threshold: every element survives each reallocation.
  std::vector<uint64_t> v;
  for (uint64_t i = 0; i < (uint64_t{3} << 20); ++i) v.push_back(i * 7);
  for (uint64_t i = 0; i < v.size(); i += 4099) ASSERT_EQ(v[i], i * 7);
  std::string s(5 << 20, 'q');
  s += "end";
  EXPECT_EQ(s.substr(s.size() - 4), "qend");
  std::unique_ptr<char[]> small(new char[100]);  // small blocks: malloc's
  small[99] = 1;
  EXPECT_EQ(small[99], 1);
}

TEST(RecyclingNew, Disabled) {
  if (kSanitized) GTEST_SKIP() << "the sanitizer's allocator serves new here";
  if (!Off()) GTEST_SKIP() << "run with TRUFFLD_PAGE_RECYCLING=0 (ctest entry recycling_new_disabled)";
  std::unique_ptr<unsigned char[]> a(new unsigned char[kBig]);
  EXPECT_FALSE(Aligned(a.get())) << "malloc's large blocks sit 16 bytes into a page";
}

}  // namespace
