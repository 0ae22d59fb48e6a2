#include "truffld/string_pool.h"

#include <cstring>

namespace truffld {

namespace {
constexpr size_t kFirstChunk = 64 << 10;
constexpr size_t kChunk = 1 << 20;
constexpr size_t kFirstSlots = 1024;

inline uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// 64x64 -> 128 multiply, halves folded: the mixing step of wyhash-style hashes.
inline uint64_t Fold(uint64_t a, uint64_t b) {
  const __uint128_t r = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}
constexpr uint64_t kP0 = 0xa0761d6478bd642full, kP1 = 0xe7037ed1a0b428dbull, kP2 = 0x8ebc6af09c88c6e3ull;
}  // namespace

uint64_t ProcessHashSeed() noexcept {
  static const uint64_t seed = Fold(reinterpret_cast<uintptr_t>(&kFirstChunk) ^ kP2, kP1);
  return seed;
}

uint64_t HashBytes(std::string_view s, uint64_t seed) noexcept {
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = seed ^ Fold(n ^ kP0, kP1);
  for (; n > 16; n -= 16, p += 16) h = Fold(Load64(p) ^ kP0 ^ h, Load64(p + 8) ^ kP1);
  uint64_t a = 0, b = 0;
  if (n >= 8) {  // 8..16 bytes: two overlapping words
    a = Load64(p);
    b = Load64(p + n - 8);
  } else if (n >= 4) {
    a = Load32(p);
    b = Load32(p + n - 4);
  } else if (n > 0) {
    a = (uint64_t(uint8_t(p[0])) << 16) | (uint64_t(uint8_t(p[n >> 1])) << 8) | uint8_t(p[n - 1]);
  }
  return Fold(Fold(a ^ kP0 ^ h, b ^ kP1) ^ s.size(), kP2);
}

uint64_t HashWords(const uint64_t* w, size_t n, uint64_t seed) noexcept {
  uint64_t h = seed ^ Fold(n ^ kP0, kP1);
  for (; n >= 2; n -= 2, w += 2) h = Fold(w[0] ^ kP0 ^ h, w[1] ^ kP1);
  if (n) h = Fold(w[0] ^ kP0 ^ h, kP1);
  return Fold(h, kP2);
}

StringPool::StringPool() : slots_(kFirstSlots, 0), seed_(ProcessHashSeed()) { views_.emplace_back(); }

char* StringPool::Store(std::string_view s) {
  if (s.size() > kChunk / 4) {  // big strings get a chunk of their own
    big_.emplace_back(s);
    return big_.back().data();
  }
  if (chunks_.empty() || chunk_used_ + s.size() > chunk_size_) {
    chunk_size_ = chunks_.empty() && s.size() <= kFirstChunk ? kFirstChunk : kChunk;
    chunks_.emplace_back(new char[chunk_size_]);
    chunk_used_ = 0;
  }
  char* p = chunks_.back().get() + chunk_used_;
  std::memcpy(p, s.data(), s.size());
  chunk_used_ += s.size();
  return p;
}

StrId StringPool::Add(std::string_view s) {
  views_.emplace_back(Store(s), s.size());
  bytes_ += s.size();
  return static_cast<StrId>(views_.size() - 1);
}

void StringPool::Grow() {
  std::vector<uint64_t> slots(slots_.size() * 2, 0);
  const size_t mask = slots.size() - 1;
  for (const uint64_t old : slots_) {  // the interned strings (not those stored by Add)
    if (!old) continue;
    const StrId id = static_cast<StrId>(old);
    const uint64_t h = HashBytes(views_[id], seed_);
    size_t i = h & mask;
    while (slots[i]) i = (i + 1) & mask;
    slots[i] = (h >> 32 << 32) | id;
  }
  slots_.swap(slots);
}

StrId StringPool::Intern(std::string_view s) {
  const uint64_t h = HashBytes(s, seed_);
  const uint64_t tag = h >> 32 << 32;
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  for (uint64_t slot; (slot = slots_[i]) != 0; i = (i + 1) & mask) {
    if ((slot & ~uint64_t{0xFFFFFFFF}) != tag) continue;
    const StrId id = static_cast<StrId>(slot);
    const std::string_view v = views_[id];
    if (v.size() == s.size() && (s.empty() || std::memcmp(v.data(), s.data(), s.size()) == 0)) return id;
  }
  const StrId id = static_cast<StrId>(views_.size());
  views_.emplace_back(s.empty() ? "" : Store(s), s.size());
  slots_[i] = tag | id;
  bytes_ += s.size();
  if (++interned_ * 2 > slots_.size()) Grow();
  return id;
}

}  // namespace truffld
