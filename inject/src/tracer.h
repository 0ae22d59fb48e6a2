// Tracer: the per-process capture engine behind the injection entry points.
//
// Owns the configuration, the per-thread rings (RingRegistry), the NVTX handle registry, the
// CUPTI activity-buffer pool and the one background writer thread that drains rings and
// completed CUPTI buffers, formats JSONL and writes the dump (DumpSink). Producers call Emit(),
// the lock-free, allocation-free hot path. Flushes happen every flush_ms, on request
// (RequestFlush, e.g. on cudaDeviceReset) and at exit/signals (FlushAndWait, bounded).
// Exactly one Tracer exists per traced process; the entry points (entry.cc) create it and hand
// it to the NVTX and CUPTI adapters, nothing else reaches it globally.
// Units: ns on the configured clock (Now()). Thread-safety: stated per method.
#pragma once

#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "buffer_pool.h"
#include "config.h"
#include "api_stack.h"
#include "device_windows.h"
#include "dump_sink.h"
#include "end_queue.h"
#include "format.h"
#include "gpu_activity.h"
#include "nvtx_registry.h"
#include "ring_registry.h"
#include "tick_clock.h"

namespace truffld::inject {

// Per-thread producer state. Plain data, zero-initialised, no destructor (safe at any point of
// process teardown).
struct ThreadState {
  RecordRing* ring;
  uint32_t tid;
  int32_t nvtx_depth;        // push/pop nesting, returned to NVTX callers
  int32_t drop_from;         // 1 + the nesting level of a dropped push still open; 0 = none
  int32_t step_from;         // 1 + the nesting level of the step range open; 0 = none
  uint32_t step_phase;       // that step's phase class (DeviceWindows::PhaseOf)
  int64_t step_begin_ns;     // and its begin (Now()), for the slow-step trigger
  int32_t comm_from;         // 1 + the nesting level of the collective range open; 0 = none
  uint32_t comm_class;       // its class (DeviceWindows::CollectiveOf)
  int64_t comm_begin_ns;     // and its begin (Now()), for the slow-collective trigger
  uint32_t attach_backoff;   // events to skip before retrying a failed ring attach
  ApiStack api;              // the CUDA API calls open on this thread (api_stack.h)
  bool is_tracer_thread;     // the writer thread: its own CUDA calls are not traced
};
extern thread_local ThreadState t_thread;

// The calling thread's t_thread, its address looked up once. The injector is dlopen'ed, so each
// t_thread access is a __tls_get_addr call (general-dynamic TLS), and the compiler recomputes
// the address at each use rather than keep it: the pop path of Dispatch made six calls. The
// empty asm makes the address an opaque value held in a register or on the stack. Callers
// pass the reference down (range_balance.h) instead of naming t_thread again.
inline ThreadState& CurrentThread() noexcept {
  ThreadState* t = &t_thread;
  asm("" : "+r"(t));
  return *t;
}

// Decodes completed CUPTI buffers; implemented by the CUPTI adapter so that the writer never
// sees a CUPTI type.
class ActivitySource {
 public:
  virtual ~ActivitySource() = default;
  virtual void Decode(const uint8_t* buffer, size_t valid_bytes,
                      const std::function<void(const GpuActivity&)>& fn) = 0;
  // cuptiActivityFlushAll; called at exit before the final drain.
  virtual void FlushAll(bool forced) = 0;
  // Device list and versions for META (called on the writer thread).
  virtual void Describe(MetaInfo* meta) = 0;
};

class Tracer {
 public:
  Tracer(Config config, std::vector<std::string> cmdline, std::string host);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Starts the writer thread. Thread-safety: call once, from the initialising thread.
  void Start();

  // Current time in ns on the tracer clock (not the hot path: producers store ReadTicks()).
  // Thread-safe, async-signal-safe.
  int64_t Now() const noexcept {
    timespec ts;
    clock_gettime(clock_id_, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }

  // Hot path: copies the record (tid filled in) and its data, `a` then `b` (name then
  // payload), into this thread's ring; `rv` says what it does to the ring's close reservations
  // (range_balance.h). Returns false when the record was not written, which is then counted per
  // kind unless `count_drop` is false. Never blocks, never allocates after the thread's first
  // event.
  bool Emit(Record& r, const char* a, size_t a_len, const char* b = nullptr, size_t b_len = 0,
            Reserve rv = Reserve::kNone, bool count_drop = true) noexcept {
    return Emit(t_thread, r, a, a_len, b, b_len, rv, count_drop);
  }
  // The same for a caller that holds the calling thread's t_thread already.
  bool Emit(ThreadState& t, Record& r, const char* a, size_t a_len, const char* b = nullptr,
            size_t b_len = 0, Reserve rv = Reserve::kNone, bool count_drop = true) noexcept {
    if (__builtin_expect(t.ring == nullptr, 0) && !AttachThread(t)) {
      if (count_drop) registry_.CountNoRing(r.kind);
      return false;
    }
    r.tid = t.tid;
    if (Landed(t.ring->TryPush(r, a, a_len, b, b_len, rv))) return true;
    if (count_drop) t.ring->CountDrop(r.kind);
    return false;
  }

  // The same for a compact record (RecordRing::TryPushCompact: kind, time and name) on a thread
  // whose ring is attached: false, with nothing counted, when the ring is full, so that the
  // caller's general path counts the drop.
  bool EmitCompact(ThreadState& t, RecordKind kind, int64_t t0, const char* name, size_t len,
                   Reserve rv) noexcept {
    return Landed(t.ring->TryPushCompact(kind, t.tid, t0, name, len, rv));
  }
  // Whether a push's record went in (not kPushFull); wakes the writer when the push asks for a
  // drain (kPushOkWake).
  bool Landed(PushResult pr) noexcept {
    if (__builtin_expect(pr != kPushOk, 0)) {
      if (pr == kPushFull) return false;
      WakeWriter();
    }
    return true;
  }

  // The calling thread's ring (attached on first use), or nullptr when it has none.
  RecordRing* ThreadRing() noexcept {
    ThreadState& t = t_thread;
    if (__builtin_expect(t.ring == nullptr, 0)) AttachThread(t);
    return t.ring;
  }
  // Loss counters for records dropped without a push attempt (the rest of a dropped range),
  // whole ranges dropped, and closes lost although their open was written. Calling thread's
  // ring, or process-wide counters when it has none. Thread-safe.
  void CountDropped(RecordKind k) noexcept {
    if (RecordRing* ring = t_thread.ring) ring->CountDrop(k); else registry_.CountNoRing(k);
  }
  void CountRangeDropped(bool start_end) noexcept {
    if (RecordRing* ring = t_thread.ring) ring->CountRangeDrop(start_end);
    else no_ring_ranges_dropped_[start_end ? 1 : 0].fetch_add(1, std::memory_order_relaxed);
  }
  void CountUnbalanced() noexcept {
    if (RecordRing* ring = t_thread.ring) ring->CountUnbalanced();
    else no_ring_unbalanced_.fetch_add(1, std::memory_order_relaxed);
  }
  // Start/end credits (range_balance.h): at most kStartCredits written starts whose end is
  // guaranteed a place (their ring, else end_queue_). Thread-safe.
  static constexpr int64_t kStartCredits = 4096;
  bool TakeStartCredit() noexcept {
    if (start_credits_used_.fetch_add(1, std::memory_order_relaxed) < kStartCredits) return true;
    start_credits_used_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  void ReturnStartCredit() noexcept { start_credits_used_.fetch_sub(1, std::memory_order_relaxed); }
  // Queues the end `r` (kind kNvtxEnd, its ring full) for the writer. Thread-safe.
  bool QueueEnd(const Record& r) noexcept;

  // Counters the producers bump for data they could not copy. Thread-safe (relaxed).
  void CountPayloadTooLarge() noexcept { payloads_too_large_.fetch_add(1, std::memory_order_relaxed); }
  void CountNameTruncated() noexcept { names_truncated_.fetch_add(1, std::memory_order_relaxed); }

  NvtxRegistry& nvtx() { return nvtx_; }
  ActivityBufferPool& activity_pool() { return pool_; }
  const Config& config() const { return config_; }
  int64_t pid() const { return pid_; }

  // CUPTI side (adapter). Thread-safe.
  void SetActivitySource(ActivitySource* s) { activity_source_.store(s, std::memory_order_release); }
  void EnqueueActivityBuffer(uint8_t* buffer, size_t valid_bytes);
  void AddCuptiDropped(uint64_t n) { cupti_dropped_.fetch_add(n, std::memory_order_relaxed); }
  // An API call left out because one of its callbacks was not seen (api_stack.h).
  void AddApiUnpaired() { api_unpaired_.fetch_add(1, std::memory_order_relaxed); }
  void SetCuptiStatus(const std::string& status);

  // Sampled device windows (device_windows.h). The CUPTI adapter hands over how to switch
  // device activity (applied at once to the current state); steps, slow steps and the writer's
  // periodic check (time edges, the control file) move the edges, each written as a
  // DEVICE_WINDOW record. Thread-safe (one mutex, taken once per step begin and end, never on
  // other events). `t` is the calling thread's t_thread; `name` the step's NVTX name.
  using DeviceSwitch = void (*)(bool on);
  void SetDeviceSwitch(DeviceSwitch s);
  bool sampling() const { return config_.device_windows.sampled(); }
  bool IsStepName(std::string_view name) const { return HasPrefix(step_prefixes_, name); }
  void StepBegin(ThreadState& t, std::string_view name) noexcept;
  void StepEnd(ThreadState& t) noexcept;
  // A collective range (NVTX domain "truffld.comm", the hooks' comm ranges) opens / closes on
  // this thread: a far slower one than the recent ones of its name requests a window.
  void CollectiveBegin(ThreadState& t, std::string_view name) noexcept;
  void CollectiveEnd(ThreadState& t) noexcept;
  // The state behind the exported truffld_detail_window(): 1 while a window is open, 0 while
  // none is, -1 when there are no windows (no tracer yet, or TRUFFLD_DEVICE_WINDOWS=all);
  // `*generation` (when not null) gets the number of windows opened so far. Lock-free (one
  // atomic load), callable from any thread at any time, also before a Tracer exists.
  static int DetailWindow(unsigned long long* generation) noexcept;

  // Wakes the writer for a flush without waiting. Thread-safe, async-signal-safe.
  void RequestFlush() noexcept;
  // Wakes the writer to drain early (a ring is an eighth full). Thread-safe, async-signal-safe.
  void WakeWriter() noexcept;
  // Flushes everything queued so far (with `final_stats`: writes STATS and closes the file)
  // and waits up to timeout_ms for the writer to finish. Async-signal-safe. Returns false on
  // timeout or when no writer runs.
  bool FlushAndWait(bool final_stats, int timeout_ms) noexcept;
  // Normal exit: CUPTI flush, final drain, STATS. Idempotent.
  void Shutdown();

  // fork() hooks (pthread_atfork).
  void PrepareFork();
  void ParentAfterFork();
  void ChildAfterFork();

  // One stderr line prefixed "truffld:". Thread-safe.
  static void Log(const std::string& msg);

 private:
  bool AttachThread(ThreadState& t) noexcept;
  static void ReleaseThreadRing(void* ring);
  void WriterMain();
  void DrainOnce(std::string& out, std::string& scratch);
  void DrainRings(std::string& out, std::string& scratch);  // DrainOnce's ring part
  void OpenDumpAndWriteMeta(std::string& out);
  void WriteStats(std::string& out);
  // Under window_mu_: applies a window edge (switch, then its record).
  // `switch_device`: false at exit (the edge is written, CUPTI is left as it is).
  void ApplyWindowEdge(const DeviceWindows::Edge& e, bool before_switch, bool switch_device = true);
  void FormatWindowMarks(std::string& out);  // writer thread
  int WindowTick();  // writer thread: control file, time edges; ms to the next edge (-1: none)
  bool ControlFileChanged();  // writer thread: stat()s TRUFFLD_WINDOW_CONTROL
  void PublishDetailState();  // under window_mu_: the atomic behind DetailWindow
  void CloseWindowAtExit();

  struct WindowMark {
    uint64_t ticks;
    uint64_t window;
    bool start;
    DeviceWindows::Trigger trigger;
    uint32_t tid;
  };

  Config config_;
  std::vector<std::string> cmdline_;
  std::string host_;
  RankInfo rank_;
  int64_t pid_;
  clockid_t clock_id_;
  RingRegistry registry_;
  NvtxRegistry nvtx_;
  ActivityBufferPool pool_;
  std::unique_ptr<DumpSink> sink_;
  pthread_key_t thread_key_{};
  std::unique_ptr<std::thread> writer_;
  std::thread* parent_writer_ = nullptr;  // fork child: the parent's (absent) writer, never joined
  std::atomic<bool> writer_running_{false};
  std::atomic<pthread_t> writer_id_{};      // compared with pthread_self(): signal-safe
  int wake_fd_ = -1;                       // eventfd the writer polls
  std::atomic<uint64_t> flush_requested_{0};
  std::atomic<uint64_t> flush_done_{0};
  std::atomic<bool> final_requested_{false};
  std::atomic<bool> finished_{false};
  std::atomic<bool> shutdown_started_{false};
  std::atomic<ActivitySource*> activity_source_{nullptr};
  std::mutex activity_mu_;
  std::deque<std::pair<uint8_t*, size_t>> activity_queue_;
  std::mutex status_mu_;
  std::string cupti_status_ = "not initialised (no CUDA injection seen)";
  std::atomic<uint64_t> cupti_dropped_{0};
  std::atomic<uint64_t> api_unpaired_{0};
  std::atomic<uint64_t> payloads_too_large_{0};
  std::atomic<uint64_t> names_truncated_{0};
  std::atomic<uint64_t> no_ring_ranges_dropped_[2] = {};
  std::atomic<uint64_t> no_ring_unbalanced_{0};
  std::atomic<int64_t> start_credits_used_{0};
  std::vector<std::string> step_prefixes_;
  std::mutex window_mu_;
  DeviceWindows windows_;                   // under window_mu_
  DeviceSwitch device_switch_ = nullptr;    // under window_mu_
  std::vector<WindowMark> window_marks_;    // under window_mu_
  ControlFileWatch control_;                // writer thread only
  EndQueue end_queue_{static_cast<size_t>(kStartCredits)};
  uint64_t written_[kNumRecordKinds] = {};  // writer thread only
  int64_t last_clock_ns_ = 0;               // writer thread only
  TickClock tick_clock_;                    // writer thread only (anchored in Start)
  // The writer's text buffers; members (not locals) so that a fork child still owns them.
  std::string writer_out_, writer_scratch_;
  LineTail line_tail_;  // writer thread only: the end of plain NVTX lines (format.h)
};

}  // namespace truffld::inject
