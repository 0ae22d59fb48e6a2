#include "truffld/merge/string_pool.h"

#include <cstring>

namespace truffld::merge {

namespace {
constexpr size_t kFirstChunk = 64 << 10;
constexpr size_t kChunk = 1 << 20;
}

StringPool::StringPool() { views_.emplace_back(); }

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

StrId StringPool::Intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  std::string_view stored(s.empty() ? "" : Store(s), s.size());
  StrId id = static_cast<StrId>(views_.size());
  views_.push_back(stored);
  index_.emplace(stored, id);
  bytes_ += s.size();
  return id;
}

}  // namespace truffld::merge
