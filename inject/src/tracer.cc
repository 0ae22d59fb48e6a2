// Tracer: construction, thread attach, flush requests and fork handling. See tracer.h.
// The writer thread's loop lives in writer.cc.
#include "tracer.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace truffld::inject {

thread_local ThreadState t_thread;
bool g_use_counter = false;
clockid_t g_tick_fallback_clock = CLOCK_MONOTONIC_RAW;

bool CounterIsInvariant() {
#if defined(__x86_64__) || defined(__i386__)
  FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (!f) return false;
  char line[4096];
  bool constant = false, nonstop = false;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "flags", 5) != 0) continue;
    constant = std::strstr(line, " constant_tsc") != nullptr;
    nonstop = std::strstr(line, " nonstop_tsc") != nullptr;
    break;
  }
  std::fclose(f);
  return constant && nonstop;
#elif defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

namespace {
// Small rings (threads past the large rings' half of the budget) and the part of every ring
// touched up front: 1 MiB, 8192 records.
constexpr size_t kSmallRingSlots = (size_t{1} << 20) / kSlotBytes;
size_t RingSlots(const Config& c) { return static_cast<size_t>(c.thread_buffer_kb) * 1024 / kSlotBytes; }
uint64_t RingBudget(const Config& c) {
  const uint64_t total = static_cast<uint64_t>(c.max_buffer_mb) << 20;
  return c.cupti ? total * 3 / 4 : total;
}
size_t MaxActivityBuffers(const Config& c) {
  const uint64_t total = static_cast<uint64_t>(c.max_buffer_mb) << 20;
  const uint64_t per = static_cast<uint64_t>(c.activity_buffer_kb) << 10;
  const uint64_t n = (total / 4) / per;
  return static_cast<size_t>(n < 2 ? 2 : n);
}
}  // namespace

Tracer::Tracer(Config config, std::vector<std::string> cmdline, std::string host)
    : config_(std::move(config)),
      cmdline_(std::move(cmdline)),
      host_(std::move(host)),
      rank_(DetectRank([](const char* n) { return ::getenv(n); })),
      pid_(::getpid()),
      clock_id_(config_.clock_realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC_RAW),
      registry_(RingSlots(config_), kSmallRingSlots, RingBudget(config_), kSmallRingSlots),
      pool_(static_cast<size_t>(config_.activity_buffer_kb) << 10, MaxActivityBuffers(config_)),
      step_prefixes_(SplitPrefixes(config_.step_prefixes)),
      windows_(config_.device_windows, 0) {
  pthread_key_create(&thread_key_, &Tracer::ReleaseThreadRing);
  g_tick_fallback_clock = clock_id_;
  g_use_counter = config_.use_counter && CounterIsInvariant();
  tick_clock_.set_identity(!g_use_counter);
  tick_clock_.Anchor(ReadTicks(), Now());
  windows_.Reset(Now());
  PublishDetailState();
}

void Tracer::Log(const std::string& msg) {
  const std::string line = "truffld: " + msg + "\n";
  ssize_t rc = ::write(2, line.data(), line.size());
  (void)rc;
}

// The registry pointer is needed from a C callback with only the ring as argument. Every
// attaching thread stores it while exiting threads read it: atomic (ThreadSanitizer saw the race).
static std::atomic<RingRegistry*> g_registry_for_release{nullptr};

void Tracer::ReleaseThreadRing(void* ring) {
  if (RingRegistry* reg = g_registry_for_release.load(std::memory_order_acquire))
    reg->Release(static_cast<RecordRing*>(ring));
}

bool Tracer::AttachThread(ThreadState& t) noexcept {
  if (t.is_tracer_thread) return false;
  if (t.attach_backoff > 0) { --t.attach_backoff; return false; }
  RecordRing* ring = registry_.Acquire();
  if (!ring) {
    t.attach_backoff = 4096;  // budget spent: retry rarely, count drops meanwhile
    return false;
  }
  t.tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  g_registry_for_release.store(&registry_, std::memory_order_release);
  pthread_setspecific(thread_key_, ring);
  t.ring = ring;
  return true;
}

void Tracer::Start() {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  // The writer must never receive the application's signals (nor SIGXFSZ from a full disk,
  // which then shows up as EFBIG and is counted).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  writer_running_.store(true, std::memory_order_release);
  writer_ = std::make_unique<std::thread>([this] { WriterMain(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

bool Tracer::QueueEnd(const Record& r) noexcept {
  QueuedEnd e;
  e.t0 = r.t0;
  e.id = r.id;
  e.domain = r.domain;
  e.tid = t_thread.tid ? t_thread.tid : static_cast<uint32_t>(::syscall(SYS_gettid));
  return end_queue_.Push(e);
}

void Tracer::EnqueueActivityBuffer(uint8_t* buffer, size_t valid_bytes) {
  {
    std::lock_guard<std::mutex> lock(activity_mu_);
    activity_queue_.emplace_back(buffer, valid_bytes);
  }
}

void Tracer::SetCuptiStatus(const std::string& status) {
  std::lock_guard<std::mutex> lock(status_mu_);
  cupti_status_ = status;
}

void Tracer::RequestFlush() noexcept {
  if (wake_fd_ < 0) return;
  flush_requested_.fetch_add(1, std::memory_order_acq_rel);
  const uint64_t one = 1;
  ssize_t rc = ::write(wake_fd_, &one, sizeof one);
  (void)rc;
}

void Tracer::WakeWriter() noexcept {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  ssize_t rc = ::write(wake_fd_, &one, sizeof one);
  (void)rc;
}

bool Tracer::FlushAndWait(bool final_stats, int timeout_ms) noexcept {
  if (!writer_running_.load(std::memory_order_acquire) || wake_fd_ < 0) return false;
  if (finished_.load(std::memory_order_acquire)) return true;
  // Never wait for ourselves. (No thread_local access here: this runs in signal handlers,
  // where a first touch of a dlopen'ed library's TLS could allocate.)
  if (pthread_equal(pthread_self(), writer_id_.load(std::memory_order_acquire))) return false;
  if (final_stats) final_requested_.store(true, std::memory_order_release);
  const uint64_t seq = flush_requested_.fetch_add(1, std::memory_order_acq_rel) + 1;
  const uint64_t one = 1;
  ssize_t rc = ::write(wake_fd_, &one, sizeof one);
  (void)rc;
  const timespec tick{0, 1000000};
  for (int waited = 0; waited < timeout_ms; ++waited) {
    if (finished_.load(std::memory_order_acquire)) return true;
    if (!final_stats && flush_done_.load(std::memory_order_acquire) >= seq) return true;
    nanosleep(&tick, nullptr);
  }
  return false;
}

void Tracer::Shutdown() {
  if (shutdown_started_.exchange(true)) return;
  CloseWindowAtExit();
  if (ActivitySource* s = activity_source_.load(std::memory_order_acquire)) s->FlushAll(true);
  const bool done = FlushAndWait(/*final_stats=*/true, 10000);
  if (writer_ && writer_->joinable()) {
    if (done) writer_->join(); else writer_->detach();
  }
}

void Tracer::PrepareFork() {
  registry_.LockForFork();
  nvtx_.mutex_for_fork().lock();
  pool_.mutex_for_fork().lock();
  activity_mu_.lock();
  status_mu_.lock();
  window_mu_.lock();
}

void Tracer::ParentAfterFork() {
  window_mu_.unlock();
  status_mu_.unlock();
  activity_mu_.unlock();
  pool_.mutex_for_fork().unlock();
  nvtx_.mutex_for_fork().unlock();
  registry_.UnlockForFork();
}

void Tracer::ChildAfterFork() {
  ParentAfterFork();  // the forking thread owns every lock in the child too
  pid_ = ::getpid();
  registry_.ResetForChild();
  for (auto& [buf, len] : activity_queue_) pool_.Put(buf);
  activity_queue_.clear();
  if (sink_) { sink_->AbandonInChild(); sink_.reset(); }
  parent_writer_ = writer_.release();  // that thread does not exist here: never join it
  if (wake_fd_ >= 0) ::close(wake_fd_);
  wake_fd_ = -1;
  for (auto& w : written_) w = 0;
  cupti_dropped_.store(0);
  api_unpaired_.store(0);
  payloads_too_large_.store(0);
  names_truncated_.store(0);
  for (auto& n : no_ring_ranges_dropped_) n.store(0);
  end_queue_.Reset();
  windows_.Reset(Now());  // the child's steps start afresh; CUPTI does not follow a fork
  PublishDetailState();
  window_marks_.clear();
  start_credits_used_.store(0);
  no_ring_unbalanced_.store(0);
  flush_requested_.store(0);
  flush_done_.store(0);
  final_requested_.store(false);
  finished_.store(false);
  shutdown_started_.store(false);
  writer_running_.store(false);
  t_thread.tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  Start();
}

}  // namespace truffld::inject
