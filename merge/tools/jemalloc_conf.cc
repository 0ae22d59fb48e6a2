// jemalloc's settings for truffld-merge (linked only with TRUFFLD_ALLOCATOR=jemalloc).
//
// jemalloc reads the `malloc_conf` string when it starts (its documented configuration symbol).
// thp:always asks the kernel for transparent huge pages on jemalloc's arenas (madvise), so the
// merge's large tables are backed by 2 MiB pages on kernels whose THP mode is "madvise"
// (Debian's default), where the C library's malloc gets 4 KiB pages unless a tunable is set
// before the process starts; metadata_thp:auto does the same for jemalloc's own metadata once it
// is large. Nothing here runs code: under a sanitizer, whose allocator replaces malloc, the
// string is simply never read.
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "thp:always,metadata_thp:auto";
}
