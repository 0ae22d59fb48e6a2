// DirectWriter implementation (see direct_writer.h): the block ring, the background thread, the
// fall-back from O_DIRECT and the unaligned last bytes. Linux only; elsewhere Open says
// "refused" and callers write the usual way.
#include "truffld/direct_writer.h"

#include "truffld/direct_io.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#if defined(__linux__)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace truffld {

Result<std::unique_ptr<DirectWriter>> DirectWriter::Open(const std::string& path, Options opt) {
#if defined(__linux__) && defined(O_DIRECT)
  const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (opt.o_direct ? O_DIRECT : 0);
  const int fd = ::open(path.c_str(), flags, 0666);
  if (fd < 0) {
    if (errno == EINVAL && opt.o_direct) return std::unique_ptr<DirectWriter>();  // refused
    return IoError(path + ": cannot create: " + std::strerror(errno));
  }
  return std::unique_ptr<DirectWriter>(new DirectWriter(fd, path, opt));
#else
  (void)path;
  (void)opt;
  return std::unique_ptr<DirectWriter>();
#endif
}

Result<std::unique_ptr<DirectWriter>> DirectWriter::Adopt(int fd, const std::string& name, Options opt) {
#if defined(__linux__) && defined(O_DIRECT)
  if (opt.o_direct && !SetDirectIo(fd, true)) {
    if (errno == EINVAL) return std::unique_ptr<DirectWriter>();  // refused
    return IoError(name + ": cannot turn on direct I/O: " + std::strerror(errno));
  }
  return std::unique_ptr<DirectWriter>(new DirectWriter(fd, name, opt));
#else
  (void)fd;
  (void)name;
  (void)opt;
  return std::unique_ptr<DirectWriter>();
#endif
}

DirectWriter::DirectWriter(int fd, std::string name, Options opt)
    : fd_(fd), name_(std::move(name)), opt_(opt), direct_(true) {
#if defined(__linux__)
  if (!opt_.pwrite) opt_.pwrite = ::pwrite;
#endif
  opt_.block = (std::max(opt_.block, kAlign) + kAlign - 1) / kAlign * kAlign;
  opt_.blocks = std::max(opt_.blocks, 2);
  for (int i = 0; i < opt_.blocks; ++i) mem_.emplace_back(nullptr, std::free);
  for (int i = opt_.blocks - 1; i >= 1; --i) free_.push_back(i);
  cur_ = Block{BlockData(0), 0, opt_.block};
  thread_ = std::thread([this] { Run(); });
}

DirectWriter::~DirectWriter() {
  Stop();
#if defined(__linux__)
  if (fd_ >= 0) ::close(fd_);
#endif
}

char* DirectWriter::BlockData(int i) {
  if (!mem_[i]) {
    void* p = std::aligned_alloc(kAlign, opt_.block);
    if (!p) throw std::bad_alloc();
    mem_[i].reset(static_cast<char*>(p));
  }
  return mem_[i].get();
}

int DirectWriter::TakeFreeBlock() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !free_.empty(); });  // the thread returns every block it takes
  if (!error_.ok()) failed_ = true;
  const int i = free_.back();
  free_.pop_back();
  return i;
}

DirectWriter::Block DirectWriter::Commit(size_t size) {
  assert(size >= cur_.size && size <= cur_.capacity);
  cur_.size = size;
  if (failed_) {  // the file is lost already: text is dropped, Finish reports the error
    cur_.size = 0;
    return cur_;
  }
  const size_t whole = size & ~(kAlign - 1), tail = size - whole;
  if (whole == 0) return cur_;
  Enqueue(whole);
  offset_ += whole;
  // The thread reads [0, whole) of the old block meanwhile; its tail is only read here. If the
  // thread is done with it already and hands the same block back, the ranges do not overlap.
  const int next = TakeFreeBlock();
  char* data = BlockData(next);
  std::memcpy(data, cur_.data + whole, tail);
  cur_index_ = next;
  cur_ = Block{data, tail, opt_.block};
  return cur_;
}

void DirectWriter::Enqueue(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(Job{cur_.data, bytes, offset_, cur_index_});
  }
  cv_.notify_all();
}

DirectWriter::Block DirectWriter::Append(const char* p, size_t n) {
  while (n > 0) {
    if (cur_.size == cur_.capacity) {
      Commit(cur_.capacity);
      continue;
    }
    const size_t k = std::min(n, cur_.capacity - cur_.size);
    std::memcpy(cur_.data + cur_.size, p, k);
    cur_.size += k;
    p += k;
    n -= k;
  }
  return cur_;
}

void DirectWriter::Run() {
  for (;;) {
    Job job;
    bool skip;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      job = queue_.front();
      queue_.pop_front();
      ++busy_;
      skip = !error_.ok();
    }
    Status st = skip ? Status::Ok() : WriteAll(job.data, job.bytes, job.offset);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!st.ok() && error_.ok()) error_ = std::move(st);
      free_.push_back(job.block);
      --busy_;
    }
    cv_.notify_all();
  }
}

Status DirectWriter::WriteAll(const char* p, size_t n, uint64_t offset) {
#if defined(__linux__)
  while (n > 0) {
    const ssize_t r = opt_.pwrite(fd_, p, n, off_t(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == EINVAL && direct_) {
      // The device wants another alignment (or a short write left an unaligned rest): the rest
      // of the file goes through the page cache.
      TRUFFLD_RETURN_IF_ERROR(DirectOff());
      fell_back_ = true;
      continue;
    }
    if (r <= 0)
      return IoError(name_ + ": write failed at byte " + std::to_string(offset) + ": " +
                     (r < 0 ? std::strerror(errno) : "no progress"));
    if (direct_) direct_bytes_ += uint64_t(r);
    p += r;
    n -= size_t(r);
    offset += uint64_t(r);
  }
  return Status::Ok();
#else
  (void)p;
  (void)n;
  (void)offset;
  return Unsupported(name_ + ": direct writes need Linux");
#endif
}

Status DirectWriter::DirectOff() {
#if defined(__linux__)
  if (!direct_) return Status::Ok();
  if (!SetDirectIo(fd_, false)) return IoError(name_ + ": cannot turn direct I/O off: " + std::strerror(errno));
#endif
  direct_ = false;
  return Status::Ok();
}

void DirectWriter::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // the thread writes what was queued first
}

Status DirectWriter::Finish(size_t size) {
  assert(!finished_ && size >= cur_.size && size <= cur_.capacity);
  if (finished_) return Internal(name_ + ": DirectWriter::Finish called twice");
  finished_ = true;
  cur_.size = size;
  const size_t whole = failed_ ? 0 : size & ~(kAlign - 1);
  if (whole > 0) Enqueue(whole);
  Stop();  // drains the queue: from here on everything is this thread's
  Status st = error_;
  offset_ += whole;
  const size_t tail = size - whole;
  if (st.ok() && tail > 0) {
    // The last bytes are less than one aligned unit: written through the page cache.
    st = DirectOff();
    if (st.ok()) st = WriteAll(cur_.data + whole, tail, offset_);
    if (st.ok()) offset_ += tail;
  }
#if defined(__linux__)
  if (::close(fd_) != 0 && st.ok()) st = IoError(name_ + ": close failed: " + std::strerror(errno));
  fd_ = -1;
#endif
  return st;
}

}  // namespace truffld
