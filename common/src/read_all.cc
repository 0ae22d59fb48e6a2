// Bytes and ReadAll (see byte_source.h): a whole input in one buffer.
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "truffld/byte_source.h"

namespace truffld {
namespace {

// Advises the kernel that [p, p + n) wants transparent huge pages, before it is touched: the
// whole 2 MiB-aligned pages inside it (a hint; ignored where THP is off). TRUFFLD_HUGE_PAGES=0
// turns it off.
void AdviseHugePages(char* p, size_t n) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  static const bool enabled = [] {
    const char* v = std::getenv("TRUFFLD_HUGE_PAGES");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  if (!enabled || n < 2 * kHuge) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) & ~(kHuge - 1);
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace

void Bytes::Reserve(size_t n) {
  if (n <= capacity) return;
  std::unique_ptr<char[]> bigger(new char[n]);
  AdviseHugePages(bigger.get(), n);
  if (size) std::memcpy(bigger.get(), data.get(), size);
  data = std::move(bigger);
  capacity = n;
}

Result<Bytes> ReadAll(ByteSource& src, bool allow_truncated, size_t spare, Status* read_error) {
  Bytes out;
  // One allocation when the size is known: the data, the spare bytes and room for the read
  // that sees the end. Otherwise (or past a wrong hint) the buffer doubles.
  constexpr size_t kMinRead = 4096;
  if (const uint64_t hint = src.size_hint(); hint > 0 && hint < (uint64_t{1} << 40))
    out.Reserve(size_t(hint) + std::max(spare, kMinRead));
  for (;;) {
    if (out.capacity - out.size < kMinRead) out.Reserve(std::max(out.capacity * 2, out.size + (size_t{1} << 20)));
    auto r = src.Read(out.data.get() + out.size, out.capacity - out.size);
    if (!r.ok() && read_error) {
      *read_error = r.status();
      break;
    }
    if (!r.ok()) return r.status();
    out.size += *r;
    if (*r == 0) break;
  }
  if (out.capacity - out.size < spare) out.Reserve(out.size + spare);
  if (src.truncated() && !allow_truncated)
    return Truncated(src.path() + ": " + CompressionName(src.compression()) +
                     " stream ends early (file cut short?) after " + std::to_string(out.size) +
                     " decompressed bytes");
  return out;
}

Result<Bytes> ReadWholeFile(const std::string& path, bool allow_truncated, size_t spare) {
  auto src = OpenByteSource(path);
  if (!src.ok()) return src.status();
  return ReadAll(**src, allow_truncated, spare);
}

}  // namespace truffld
