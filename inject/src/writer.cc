// Tracer's writer thread: drains the per-thread rings and completed CUPTI buffers, formats JSONL
// and writes the dump. See tracer.h for the overall design.
#include <poll.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "tracer.h"

namespace truffld::inject {

namespace {
constexpr size_t kWriteChunk = 1 << 20;  // hand text to the sink in ~1 MiB pieces
const char* kInjectorVersion = "0.1.0";
}  // namespace

void Tracer::OpenDumpAndWriteMeta(std::string& out) {
  sink_ = std::make_unique<DumpSink>(config_.output_dir, config_.compress, config_.file_mode,
                                     [](const std::string& m) { Log(m); }, config_.direct_io);
  const std::string host = host_;
  const auto rank = rank_.rank;
  const int64_t pid = pid_;
  const Compression c = config_.compress;
  if (!sink_->Open([&](int attempt) { return DumpFileName(host, rank, pid, c, attempt); })) return;
  if (config_.verbose) Log("tracing to " + sink_->path() + (sink_->direct_io() ? " (direct I/O)" : ""));
  MetaInfo m;
  m.host = host_;
  m.pid = pid_;
  m.rank = rank_.rank;
  m.local_rank = rank_.local_rank;
  m.world_size = rank_.world_size;
  m.clock = config_.clock_realtime ? "realtime" : "monotonic_raw";
  timespec rt, mono;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(clock_id_, &mono);
  m.sync_realtime_ns = static_cast<int64_t>(rt.tv_sec) * 1000000000 + rt.tv_nsec;
  m.sync_monotonic_ns = static_cast<int64_t>(mono.tv_sec) * 1000000000 + mono.tv_nsec;
  last_clock_ns_ = m.sync_monotonic_ns;
  m.cmdline = cmdline_;
  m.injector_version = kInjectorVersion;
  if (ActivitySource* s = activity_source_.load(std::memory_order_acquire)) s->Describe(&m);
  m.config = config_.Describe();
  FormatMeta(m, out);
}

// Plain NVTX lines are formatted straight into the sink's block (DumpSink::Room); any other
// record's line goes through `out`, written to the sink at once, so the lines keep the ring's
// order. `out` may hold the META line on entry.
void Tracer::DrainRings(std::string& out, std::string& scratch) {
  if (sink_ && !out.empty()) sink_->Write(out);
  out.clear();
  tick_clock_.Anchor(ReadTicks(), Now());
  registry_.ForEach([&](RecordRing& ring) {
    ring.Drain(
        [&](Record& r, std::string_view data) {  // the ring's header copy: ticks to ns in place
          r.t0 = tick_clock_.ToNs(static_cast<uint64_t>(r.t0));
          if (r.t1) r.t1 = tick_clock_.ToNs(static_cast<uint64_t>(r.t1));
          ++written_[static_cast<int>(r.kind)];
          if (char* room = sink_ ? sink_->Room(kPlainNvtxLineMax) : nullptr) {
            if (char* end = FormatPlainNvtxTo(room, r, data, pid_, line_tail_)) {
              sink_->Advance(static_cast<size_t>(end - room));
              return;
            }
          }
          FormatRecord(r, data, pid_, nvtx_, out, &line_tail_);
          if (sink_) sink_->Write(out);  // a sink that cannot take it counts the loss
          out.clear();
        },
        scratch);
  });
}

void Tracer::DrainOnce(std::string& out, std::string& scratch) {
  auto spill = [&] {
    if (out.size() >= kWriteChunk) {
      if (sink_) sink_->Write(out);
      out.clear();
    }
  };
  DrainRings(out, scratch);
  FormatWindowMarks(out);
  QueuedEnd qe;
  while (end_queue_.Pop(&qe)) {  // ends whose own ring was full (range_balance.h)
    Record c;
    std::memset(static_cast<void*>(&c), 0, sizeof(Record));
    c.kind = RecordKind::kNvtxEnd;
    c.t0 = tick_clock_.ToNs(static_cast<uint64_t>(qe.t0));
    c.id = qe.id;
    c.domain = qe.domain;
    c.tid = qe.tid;
    FormatRecord(c, {}, pid_, nvtx_, out);
    ++written_[static_cast<int>(RecordKind::kNvtxEnd)];
    ReturnStartCredit();
    spill();
  }
  std::deque<std::pair<uint8_t*, size_t>> buffers;
  {
    std::lock_guard<std::mutex> lock(activity_mu_);
    buffers.swap(activity_queue_);
  }
  ActivitySource* source = activity_source_.load(std::memory_order_acquire);
  for (auto& [buf, len] : buffers) {
    if (source) {
      source->Decode(buf, len, [&](const GpuActivity& a) {
        FormatGpuActivity(a, out);
        ++written_[static_cast<int>(a.kind)];
        spill();
      });
    }
    pool_.Put(buf);
  }
  if (config_.clock_sync_s > 0) {
    const int64_t now = Now();
    if (now - last_clock_ns_ >= config_.clock_sync_s * 1000000000LL) {
      timespec rt;
      clock_gettime(CLOCK_REALTIME, &rt);
      FormatClock(static_cast<int64_t>(rt.tv_sec) * 1000000000 + rt.tv_nsec, now, out);
      last_clock_ns_ = now;
    }
  }
  if (sink_) sink_->Write(out);
  out.clear();
}

void Tracer::WriteStats(std::string& out) {
  StatsInfo s;
  for (int k = 0; k < kNumRecordKinds; ++k) {
    s.written[k] = written_[k];
    s.dropped[k] = registry_.no_ring_dropped(static_cast<RecordKind>(k));
  }
  s.ranges_dropped_push_pop = no_ring_ranges_dropped_[0].load();
  s.ranges_dropped_start_end = no_ring_ranges_dropped_[1].load();
  s.unbalanced_closes = no_ring_unbalanced_.load();
  registry_.ForEach([&](RecordRing& ring) {
    for (int k = 0; k < kNumRecordKinds; ++k) s.dropped[k] += ring.dropped(static_cast<RecordKind>(k));
    s.ranges_dropped_push_pop += ring.ranges_dropped(false);
    s.ranges_dropped_start_end += ring.ranges_dropped(true);
    s.unbalanced_closes += ring.unbalanced();
  });
  s.cupti_dropped = cupti_dropped_.load();
  s.api_unpaired = api_unpaired_.load();
  s.payloads_too_large = payloads_too_large_.load();
  s.names_truncated = names_truncated_.load();
  {
    std::lock_guard<std::mutex> lock(window_mu_);
    s.window_triggers_refused = windows_.triggers_refused();
    if (windows_.plan().mode == WindowPlan::Mode::kCost) s.window_period = windows_.period();
  }
  s.rings = registry_.size();
  s.ring_bytes = registry_.bytes_reserved();
  s.activity_buffers = pool_.allocated();
  s.activity_buffers_denied = pool_.denied();
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    s.cupti_status = cupti_status_;
  }
  // Errors so far plus the write of this very line cannot be known in advance; report the
  // count before it (a failing STATS write is by definition not in the file).
  s.write_errors = sink_ ? sink_->write_errors() : 0;
  if (sink_) {
    s.dump_io = sink_->io_mode();
    s.direct_io_stopped = sink_->direct_stopped();
  }
  FormatStats(s, out);
}

void Tracer::WriterMain() {
  t_thread.is_tracer_thread = true;
  writer_id_.store(pthread_self(), std::memory_order_release);
  std::string& out = writer_out_;
  std::string& scratch = writer_scratch_;
  out.clear();
  out.reserve(kWriteChunk + 4096);
  bool opened = false;
  int next_window_ms = -1;  // time-mode windows: wake for their edges too
  if (sampling()) ControlFileChanged();  // the control file's baseline: only changes ask
  for (;;) {
    pollfd p{wake_fd_, POLLIN, 0};
    const int period = static_cast<int>(config_.flush_ms);
    ::poll(&p, 1, next_window_ms >= 0 && next_window_ms < period ? next_window_ms : period);
    uint64_t counter;
    while (::read(wake_fd_, &counter, sizeof counter) > 0) {
    }
    const uint64_t req = flush_requested_.load(std::memory_order_acquire);
    const bool fin = final_requested_.load(std::memory_order_acquire);
    next_window_ms = WindowTick();
    if (!opened) {
      OpenDumpAndWriteMeta(out);
      opened = true;
    }
    DrainOnce(out, scratch);
    if (fin) {
      WriteStats(out);
      if (sink_) {
        sink_->Write(out);
        sink_->Close();
      }
      out.clear();
      flush_done_.store(req, std::memory_order_release);
      finished_.store(true, std::memory_order_release);
      return;
    }
    if (sink_) sink_->Flush();
    flush_done_.store(req, std::memory_order_release);
  }
}

}  // namespace truffld::inject
