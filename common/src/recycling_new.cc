// Global operator new/delete that serve blocks of PageRecycler::kMinBlock bytes or more from one
// process-wide PageRecycler (see page_recycler.h); smaller ones from malloc, as before.
//
// Linked only into the offline tools that hold large, phase-by-phase tables (truffld-merge and
// the benchmarks that measure it), through the truffld_recycling_new object library: never into
// a library, and never into the injector, which lives inside the user's process.
// TRUFFLD_PAGE_RECYCLING=0 in the environment turns it off (read once, at the first large
// block). Sanitizer builds leave operator new to the sanitizer: this file is then empty.
// A recycled block's pages may come back at the same address with their old contents, so a
// double delete or a use after free of a large block is not caught by glibc as it might be:
// run with TRUFFLD_PAGE_RECYCLING=0 (or the ASan build) when hunting such a bug.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "truffld/page_recycler.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TRUFFLD_NO_RECYCLING_NEW 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TRUFFLD_NO_RECYCLING_NEW 1
#endif
#endif

#ifndef TRUFFLD_NO_RECYCLING_NEW

namespace {

// Never destroyed: blocks may be freed by static destructors after main returns.
truffld::PageRecycler* Recycler() {
  static truffld::PageRecycler* r = [] () -> truffld::PageRecycler* {
    const char* env = std::getenv("TRUFFLD_PAGE_RECYCLING");
    if ((env && std::strcmp(env, "0") == 0) || !truffld::PageRecycler::Enabled()) return nullptr;
    alignas(truffld::PageRecycler) static unsigned char storage[sizeof(truffld::PageRecycler)];
    return new (storage) truffld::PageRecycler(/*huge_pages=*/true);
  }();
  return r;
}

void* Plain(std::size_t n) {
  for (;;) {
    if (void* p = std::malloc(n ? n : 1)) return p;
    std::new_handler h = std::get_new_handler();
    if (!h) throw std::bad_alloc();
    h();
  }
}

void Release(void* p) noexcept {
  if (!p) return;
  // Recycled blocks are 2 MiB-aligned; malloc's almost never are, and the lookup settles it.
  if (reinterpret_cast<std::uintptr_t>(p) % truffld::PageRecycler::kUnit == 0) {
    if (truffld::PageRecycler* r = Recycler(); r && r->Free(p)) return;
  }
  std::free(p);
}

}  // namespace

void* operator new(std::size_t n) {
  if (n >= truffld::PageRecycler::kMinBlock) {
    if (truffld::PageRecycler* r = Recycler())
      if (void* p = r->Allocate(n)) return p;
  }
  return Plain(n);
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try { return operator new(n); } catch (...) { return nullptr; }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try { return operator new(n); } catch (...) { return nullptr; }
}
void operator delete(void* p) noexcept { Release(p); }
void operator delete[](void* p) noexcept { Release(p); }
void operator delete(void* p, std::size_t) noexcept { Release(p); }
void operator delete[](void* p, std::size_t) noexcept { Release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { Release(p); }

#endif  // TRUFFLD_NO_RECYCLING_NEW
