// LineReader: newline-delimited records (.jsonl, .jsonl.gz, .jsonl.zst) with file:line context.
//
// Reads through a ByteSource in large blocks and hands out each line as a string_view into its
// own buffer (no copy, no allocation per line once the buffer is warm). "\r\n" endings are
// stripped like "\n". Problems that do not stop the read are kept as Warnings, never dropped:
//   - a last line without '\n' (a killed writer): still returned, flagged truncated_last_line();
//   - a compressed stream cut short: every decodable byte returned, then a warning;
//   - a line longer than Options::max_line_bytes: skipped and counted, with its line number.
// A hard read or decode error ends the read; status() then says why, naming file and line.
// Thread-safety: one instance per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "truffld/byte_source.h"
#include "truffld/status.h"

namespace truffld {

struct LineWarning {
  long long line = 0;   // 1-based line number the warning is about (0: whole file)
  std::string message;  // already prefixed with "file:line: "
  std::string text;     // the same without the location
};

class LineReader {
 public:
  struct Options {
    size_t max_line_bytes = size_t{256} << 20;  // longer lines are skipped and counted
    size_t block_bytes = size_t{1} << 20;       // read granularity
  };

  // Opens path ("-" for stdin). Fails with NotFound/IoError naming the path.
  static Result<std::unique_ptr<LineReader>> Open(const std::string& path, Options options);
  static Result<std::unique_ptr<LineReader>> Open(const std::string& path) {
    return Open(path, Options{});
  }
  // Reads an already opened source (possibly peeked at: its peeked bytes come first).
  static std::unique_ptr<LineReader> Open(std::unique_ptr<ByteSource> src, Options options);

  // Sets *line to the next line (without its terminator) and returns true; returns false at
  // the end of input or on a hard error (check status()). The view is valid until the next call.
  bool Next(std::string_view* line);

  // 1-based number of the line last returned by Next().
  long long line_number() const { return line_no_; }
  const std::string& path() const { return src_->path(); }
  // "path:line" of the line last returned, for messages.
  std::string Where() const;

  const Status& status() const { return status_; }
  const std::vector<LineWarning>& warnings() const { return warnings_; }
  bool truncated_last_line() const { return truncated_last_line_; }
  uint64_t long_lines_skipped() const { return long_lines_skipped_; }
  uint64_t raw_bytes_read() const { return src_->raw_bytes_read(); }
  uint64_t bytes_read() const { return bytes_; }
  Compression compression() const { return src_->compression(); }

 private:
  LineReader(std::unique_ptr<ByteSource> src, Options options);
  // Appends more data to buf_; returns false at end of data or error.
  bool Fill();
  void Warn(long long line, std::string message);

  std::unique_ptr<ByteSource> src_;
  Options opt_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;  // unread data is buf_[begin_, end_)
  bool eof_ = false;
  bool skipping_long_ = false;  // inside an over-long line, discarding until '\n'
  long long line_no_ = 0;
  uint64_t bytes_ = 0;
  uint64_t long_lines_skipped_ = 0;
  bool truncated_last_line_ = false;
  Status status_;
  std::vector<LineWarning> warnings_;
};

}  // namespace truffld
