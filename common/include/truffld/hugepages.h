// Transparent huge pages for the offline tools' large heaps.
//
// truffld-merge (and merge_bench / kineto_bench, which measure it) holds hundreds of MB of plain
// records that are written once and read a few times. On kernels whose transparent-huge-page policy is "madvise" (Debian's
// default) glibc's malloc backs such heaps with 4 KiB pages unless the tunable
// glibc.malloc.hugetlb=1 is set, and faulting in 4 KiB pages was measured at over a third of
// the merge's CPU time on a virtual machine (merge phase 2.1 s -> 1.1 s on a 2 M-event dump).
// glibc reads tunables only at process start, so these binaries re-execute themselves once with the
// tunable added to GLIBC_TUNABLES, before doing anything else.
//
// Nothing happens when: TRUFFLD_HUGEPAGES=0; the tunable is already present; THP is not in
// "madvise" mode (with "always" malloc already gets huge pages, with "never" it cannot); the
// binary is built with a sanitizer (its allocator is not glibc's); /proc/self/exe cannot be
// executed (the process then simply continues with normal pages).
// Thread-safety: call first thing in main(), before any thread starts.
#pragma once

namespace truffld {

// Returns only when no re-exec happened (or it failed); on success the process image is replaced.
void MaybeReexecWithHugePages(char** argv);

// Maps every malloc block of 4 MiB or more on its own, so that freeing one hands its pages back
// at once. glibc otherwise raises its mapping threshold to the size of the largest block freed
// (up to 32 MiB): the merge's per-range and per-call tables (4-30 MB each on a 10 M-event dump)
// then come from the heap, and once freed they stay resident while the tables and nodes created
// after them fault in fresh pages (measured: 89 MB held so at the merge's second memory peak).
// A fresh page costs far more than a reused one where the hypervisor backs guest memory lazily.
// No effect on other allocators (sanitizer builds). Thread-safety: call first thing in main().
void MapLargeBlocksApart();

}  // namespace truffld
