// TraceSink: where diagnosis.trace.json's bytes go (trace_annotate.h). The file is as large as
// the merge's trace.json (hundreds of MB on a large dump), so it goes out the way truffld-merge
// writes it: with direct I/O from a small ring of aligned blocks on a background thread
// (truffld/direct_writer.h), the text never copied into the page cache. Where the path is not a
// regular file (a pipe, /dev/stdout) or the file system refuses direct I/O (tmpfs), the bytes go
// through an ofstream in 1 MiB blocks. The bytes written are the same either way.
// Units: bytes. Thread-safety: one instance per thread.
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "truffld/direct_writer.h"
#include "truffld/status.h"

namespace truffld::diagnose {

class TraceSink {
 public:
  // Creates (or truncates) `path`; an IoError naming it when it cannot be opened.
  static Result<std::unique_ptr<TraceSink>> Open(const std::string& path);
  ~TraceSink();
  TraceSink(const TraceSink&) = delete;
  TraceSink& operator=(const TraceSink&) = delete;

  // Appends `text` to the file.
  void Put(std::string_view text);
  // Writes what is left and closes the file; an IoError naming it on any failure. Call once.
  Status Finish();
  bool direct() const { return direct_ != nullptr; }  // direct I/O taken

 private:
  explicit TraceSink(std::string path) : path_(std::move(path)) {}
  void FlushBuffer();

  std::string path_;
  std::unique_ptr<DirectWriter> direct_;  // null: the ofstream below
  std::ofstream out_;
  std::string buf_;  // the ofstream's next block
};

}  // namespace truffld::diagnose
