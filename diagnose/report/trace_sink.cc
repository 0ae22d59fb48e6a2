// TraceSink (see trace_sink.h): direct I/O where the file takes it, else an ofstream.
#include "report/trace_sink.h"

#include <sys/stat.h>

namespace truffld::diagnose {
namespace {

constexpr size_t kSinkBlock = size_t{1} << 20;  // the ofstream's write size

// Whether `path` may be opened with direct I/O: a regular file, or none yet.
bool MayWriteDirect(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode);
}

}  // namespace

Result<std::unique_ptr<TraceSink>> TraceSink::Open(const std::string& path) {
  std::unique_ptr<TraceSink> s(new TraceSink(path));
  if (MayWriteDirect(path)) {
    auto dw = DirectWriter::Open(path);
    if (!dw.ok()) return dw.status();
    s->direct_ = std::move(*dw);
  }
  if (!s->direct_) {
    s->out_.open(path, std::ios::binary | std::ios::trunc);
    if (!s->out_) return IoError(path + ": cannot open for writing");
    s->buf_.reserve(kSinkBlock + 4096);
  }
  return s;
}

TraceSink::~TraceSink() = default;

void TraceSink::Put(std::string_view text) {
  if (direct_) {
    direct_->Append(text.data(), text.size());
    return;
  }
  buf_.append(text);
  if (buf_.size() >= kSinkBlock) FlushBuffer();
}

void TraceSink::FlushBuffer() {
  out_.write(buf_.data(), std::streamsize(buf_.size()));
  buf_.clear();
}

Status TraceSink::Finish() {
  if (direct_) {
    Status st = direct_->Finish(direct_->current().size);
    direct_.reset();
    return st;
  }
  FlushBuffer();
  out_.flush();
  out_.close();
  return out_ ? Status::Ok() : IoError(path_ + ": write failed");
}

}  // namespace truffld::diagnose
