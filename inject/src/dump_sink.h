// DumpSink: the one file a traced process writes, plain or zstd-compressed.
//
// Thin adapter over the filesystem. The file is created with O_CREAT|O_EXCL|O_NOFOLLOW (never
// following a planted symlink, never clobbering an existing dump) and the configured mode, and
// only inside the configured directory (the directory itself is created, mode 0750, when its
// parent exists). Every failure is counted in write_errors() and reported once through `log`;
// after an error the sink keeps counting (and dropping) instead of retrying forever, so the
// application never stalls on a full disk. With zstd, each Flush() ends a zstd block so that a
// killed process leaves a decodable prefix.
// Thread-safety: used only by the writer thread (and by a fork child before it starts its own).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "config.h"

namespace truffld::inject {

class DumpSink {
 public:
  using Log = std::function<void(const std::string&)>;
  DumpSink(std::string dir, Compression c, unsigned mode, Log log);
  ~DumpSink();
  DumpSink(const DumpSink&) = delete;
  DumpSink& operator=(const DumpSink&) = delete;

  // Creates the file. `name_for_attempt(k)` gives the file name to try on attempt k (k > 0 after
  // a name collision). Returns false (after logging once) when no file could be created.
  bool Open(const std::function<std::string(int)>& name_for_attempt);

  // Appends bytes (buffered for zstd). Returns false when the bytes were lost.
  bool Write(std::string_view bytes);
  // Pushes buffered bytes to the kernel (and ends a zstd block).
  void Flush();
  // Ends the zstd frame and closes the file.
  void Close();
  // Fork child: the descriptor is shared with the parent's writer; close it without writing.
  void AbandonInChild();

  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  uint64_t write_errors() const { return write_errors_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  bool WriteRaw(const char* p, size_t n);
  void Fail(const std::string& what, int err);

  std::string dir_;
  Compression compression_;
  unsigned mode_;
  Log log_;
  int fd_ = -1;
  std::string path_;
  bool broken_ = false;      // a write failed; stop writing, keep counting
  bool warned_ = false;
  uint64_t write_errors_ = 0;
  uint64_t bytes_written_ = 0;
  struct Zstd;
  std::unique_ptr<Zstd> zstd_;
};

}  // namespace truffld::inject
