#include "truffld/line_reader.h"

#include <cstring>

namespace truffld {

LineReader::LineReader(std::unique_ptr<ByteSource> src, Options options)
    : src_(std::move(src)), opt_(options) {
  buf_.resize(opt_.block_bytes * 2);
}

Result<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path, Options options) {
  if (options.block_bytes < 4096) options.block_bytes = 4096;
  auto src = OpenByteSource(path);
  if (!src.ok()) return src.status();
  return std::unique_ptr<LineReader>(new LineReader(std::move(src).value(), options));
}

std::unique_ptr<LineReader> LineReader::Open(std::unique_ptr<ByteSource> src, Options options) {
  if (options.block_bytes < 4096) options.block_bytes = 4096;
  return std::unique_ptr<LineReader>(new LineReader(std::move(src), options));
}

std::string LineReader::Where() const { return path() + ":" + std::to_string(line_no_); }

void LineReader::Warn(long long line, std::string message) {
  warnings_.push_back({line, AtLocation(path(), line, message), message});
}

bool LineReader::Fill() {
  if (eof_ || !status_.ok()) return false;
  // Compact: move unread bytes to the front, then make room for a block.
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buf_.size() - end_ < opt_.block_bytes) buf_.resize(std::max(buf_.size() * 2, end_ + opt_.block_bytes));
  auto r = src_->Read(buf_.data() + end_, buf_.size() - end_);
  if (!r.ok()) {
    status_ = Status(r.status().code(), r.status().message() + " (near line " +
                                             std::to_string(line_no_ + 1) + ")");
    return false;
  }
  if (*r == 0) {
    eof_ = true;
    if (src_->truncated())
      Warn(0, std::string(CompressionName(src_->compression())) +
                  " stream ends early (writer killed?); lines after " + std::to_string(line_no_) +
                  " may be missing");
    return false;
  }
  end_ += *r;
  bytes_ += *r;
  return true;
}

bool LineReader::Next(std::string_view* line) {
  size_t scan_from = begin_;
  for (;;) {
    const char* base = buf_.data();
    const void* nl = scan_from < end_ ? std::memchr(base + scan_from, '\n', end_ - scan_from) : nullptr;
    if (nl) {
      size_t pos = static_cast<size_t>(static_cast<const char*>(nl) - base);
      size_t start = begin_;
      begin_ = pos + 1;
      ++line_no_;
      if (skipping_long_) {
        skipping_long_ = false;
        scan_from = begin_;
        continue;
      }
      size_t len = pos - start;
      if (len > 0 && base[start + len - 1] == '\r') --len;
      *line = std::string_view(base + start, len);
      return true;
    }
    // No newline in the unread data.
    if (!skipping_long_ && end_ - begin_ > opt_.max_line_bytes) {
      ++long_lines_skipped_;
      Warn(line_no_ + 1, "line longer than " + std::to_string(opt_.max_line_bytes) +
                             " bytes skipped");
      skipping_long_ = true;
    }
    if (skipping_long_) begin_ = end_;  // discard what we have of the long line
    size_t scanned = end_ - begin_;
    if (!Fill()) break;
    scan_from = begin_ + scanned;
  }
  if (!status_.ok()) return false;
  if (skipping_long_) {  // long line ran to end of file
    skipping_long_ = false;
    ++line_no_;
    return false;
  }
  if (begin_ < end_) {  // final line without '\n'
    ++line_no_;
    size_t start = begin_, len = end_ - begin_;
    begin_ = end_;
    if (len > 0 && buf_[start + len - 1] == '\r') --len;
    truncated_last_line_ = true;
    Warn(line_no_, "last line has no newline terminator (file cut short?); " +
                       std::to_string(len) + " bytes returned as-is");
    *line = std::string_view(buf_.data() + start, len);
    return true;
  }
  return false;
}

}  // namespace truffld
