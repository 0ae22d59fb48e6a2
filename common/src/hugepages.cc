// See hugepages.h: one re-exec with glibc.malloc.hugetlb=1 when THP is in madvise mode; large blocks mapped apart.
#include "truffld/hugepages.h"

#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace truffld {
namespace {

constexpr char kTunable[] = "glibc.malloc.hugetlb";
constexpr char kMarker[] = "TRUFFLD_HUGEPAGES_REEXEC";

bool Sanitized() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

bool ThpIsMadvise() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  return std::getline(f, line) && line.find("[madvise]") != std::string::npos;
}

}  // namespace

void MaybeReexecWithHugePages(char** argv) {
  if (const char* m = std::getenv(kMarker)) {
    (void)m;
    unsetenv(kMarker);  // we are the re-executed image: never loop, keep the env clean
    return;
  }
  const char* off = std::getenv("TRUFFLD_HUGEPAGES");
  if (off && std::strcmp(off, "0") == 0) return;
  if (Sanitized() || argv == nullptr || argv[0] == nullptr) return;
  const char* cur = std::getenv("GLIBC_TUNABLES");
  std::string tunables = cur ? cur : "";
  if (tunables.find(kTunable) != std::string::npos) return;
  if (!ThpIsMadvise()) return;
  if (!tunables.empty()) tunables += ':';
  tunables += std::string(kTunable) + "=1";
  if (setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  if (setenv(kMarker, "1", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // exec failed: undo and carry on with ordinary pages.
  if (cur) setenv("GLIBC_TUNABLES", cur, 1); else unsetenv("GLIBC_TUNABLES");
  unsetenv(kMarker);
}

void MapLargeBlocksApart() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
#endif
}

}  // namespace truffld
