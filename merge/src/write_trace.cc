// trace.json writer (Chrome trace event format, loads in Perfetto and chrome://tracing).
//
// Layout: one process per rank (pid = rank, or 1000000 + n for files without a rank), one
// track per host thread (tid = OS thread id) and per GPU stream (tid = 2000000000 + device *
// 100000 + stream, named "GPU d stream s"). Complete slices ("X") for every tree node, flow
// arrows from each launch call to its device work as "bind_id" + "flow_out"/"flow_in" on the
// slices themselves (flow events v2, as Perfetto reads them).
// A slice that partially overlaps an open slice on its track cannot nest, so it moves to an
// overflow track ("<track> (overlap k)") and is counted; no track holds crossing slices.
// Times: "ts" is microseconds since otherData.time_origin_ns (the whole second at or before the
// earliest slice, on the merged axis of trees.jsonl). Viewers read "ts" as a double: absolute
// epoch microseconds (~1.8e15) keep only a quarter of a microsecond, which moves slice edges by
// up to 125 ns and can make nested slices cross; offsets from the origin keep every nanosecond
// for traces spanning up to about 50 days (2^42 us).
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "interned_json.h"
#include "truffld/merge/writers.h"

namespace truffld::merge {
namespace {

constexpr int64_t kGpuTidBase = 2000000000;
constexpr int64_t kOverflowTidStep = 100000000;
constexpr size_t kAhead = 16;  // nodes to load ahead (see MergeResult::PrefetchEvent)

// A slice's times (ns, merged axis), read from its node's event.
struct SliceTimes {
  TimeNs start, end;
};

// Reads slices' times from their nodes' events, which lie scattered: each walk over a run of
// slices loads ahead (the node of slice k + kAhead, then the event of slice k + kAhead / 2).
class SliceReader {
 public:
  SliceReader(const MergeResult& r, const uint32_t* slices) : r_(r), s_(slices) {}
  SliceTimes At(size_t k, size_t end) const {
    if (k + kAhead < end) PrefetchLine(&r_.nodes[s_[k + kAhead]]);
    if (k + kAhead / 2 < end) r_.PrefetchEvent(s_[k + kAhead / 2]);
    const Node& n = r_.nodes[s_[k]];
    return {r_.Start(n), r_.End(n)};
  }
  // Slice order: start, the longer first, node.
  bool Less(const SliceTimes& x, size_t a, const SliceTimes& y, size_t b) const {
    if (x.start != y.start) return x.start < y.start;
    return x.end != y.end ? x.end > y.end : s_[a] < s_[b];
  }

 private:
  const MergeResult& r_;
  const uint32_t* s_;
};

// Calls f(node, start, end) for a track's slices in slice order. They come as a few sorted runs
// (a host thread's ranges, then its API calls): one walk finds the runs, a second merges them
// as they are visited, each run's head times kept at hand, so no copy of the times or of the
// reordered slices is made (16 bytes a slice of the largest track was the peak of trace.json
// writing). Many runs (no common input makes them): times and a sorted list of positions.
template <class F>
void ForEachInSliceOrder(const MergeResult& r, const uint32_t* slices, size_t n, F&& f) {
  const SliceReader rd(r, slices);
  if (n == 0) return;
  std::vector<size_t> bounds{0};
  SliceTimes prev = rd.At(0, n);
  for (size_t k = 1; k < n; ++k) {
    const SliceTimes cur = rd.At(k, n);
    if (rd.Less(cur, k, prev, k - 1)) bounds.push_back(k);
    prev = cur;
    if (bounds.size() > 64) {
      std::vector<SliceTimes> times(n);
      for (size_t i = 0; i < n; ++i) times[i] = rd.At(i, n);
      std::vector<uint32_t> order(n);
      for (size_t i = 0; i < n; ++i) order[i] = uint32_t(i);
      std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return rd.Less(times[a], a, times[b], b); });
      for (uint32_t p : order) f(slices[p], times[p].start, times[p].end);
      return;
    }
  }
  bounds.push_back(n);
  struct Run { size_t at, end; SliceTimes head; };
  std::vector<Run> runs;
  for (size_t q = 0; q + 1 < bounds.size(); ++q) runs.push_back({bounds[q], bounds[q + 1], rd.At(bounds[q], bounds[q + 1])});
  for (;;) {
    Run* best = nullptr;  // the run whose head comes first
    for (Run& run : runs)
      if (run.at != run.end && (!best || rd.Less(run.head, run.at, best->head, best->at))) best = &run;
    if (!best) return;
    f(slices[best->at], best->head.start, best->head.end);
    if (++best->at != best->end) best->head = rd.At(best->at, best->end);
  }
}

using Track = std::pair<int64_t, int64_t>;  // pid, tid

// The text between a slice's name and its "ts" value, `,"cat":"L","pid":P,"tid":T,"ts":`, for
// each (track, layer), rendered when first needed: writing pid and tid digit by digit for every
// slice was a tenth of this writer.
class SliceHeads {
 public:
  explicit SliceHeads(const std::vector<Track>& tracks)
      : tracks_(tracks), at_(tracks.size() * kLayerCount, {UINT32_MAX, 0}) {}
  std::string_view Get(uint32_t track, Layer layer) {
    auto& [off, len] = at_[size_t(track) * kLayerCount + uint32_t(layer)];
    if (off == UINT32_MAX) {
      const std::string head = std::string(",\"cat\":\"") + LayerName(layer) + "\",\"pid\":" +
                               std::to_string(tracks_[track].first) + ",\"tid\":" +
                               std::to_string(tracks_[track].second) + ",\"ts\":";
      off = uint32_t(text_.size());
      len = uint32_t(head.size());
      text_ += head;
    }
    return std::string_view(text_).substr(off, len);
  }

 private:
  const std::vector<Track>& tracks_;
  std::vector<std::pair<uint32_t, uint32_t>> at_;  // (offset in text_, length); UINT32_MAX: not yet
  std::string text_;
};

}  // namespace

TimeNs TraceTimeOrigin(TimeNs earliest) {
  constexpr TimeNs kSecond = 1000000000;
  TimeNs q = earliest / kSecond;
  if (earliest % kSecond < 0) {
    if (q == INT64_MIN / kSecond) return earliest;  // the second below does not fit in int64
    --q;
  }
  return q * kSecond;
}

TraceStats WriteChromeTrace(const MergeResult& r, JsonOut* out) {
  TraceStats st;
  const uint32_t n_nodes = uint32_t(r.nodes.size());  // below kNoNode - 1 (Merge checks)
  // Each node's track: while tracks are gathered its track's index into track_keys, then its
  // final track (its track, or an overflow lane of it) as an index into lane_tracks: 4 bytes a
  // node instead of a 16-byte (pid, tid) pair. Horizontal roots duplicate their step: kNoTrack,
  // never written.
  constexpr uint32_t kNoTrack = UINT32_MAX;
  std::vector<uint32_t> track_of(n_nodes, 0);
  for (const Tree& t : r.trees)
    if (t.view == View::kHorizontal) track_of[t.root] = kNoTrack;
  std::map<std::pair<int, int64_t>, int64_t> pid_of;  // (has_rank?0:1, rank|process) -> pid
  std::map<int64_t, std::string> pid_name;
  auto PidFor = [&](const FileMeta& m, int64_t proc) {
    auto key = m.rank ? std::make_pair(0, *m.rank) : std::make_pair(1, proc);
    auto it = pid_of.find(key);
    if (it != pid_of.end()) return it->second;
    int64_t pid = m.rank ? *m.rank : 1000000 + int64_t(pid_of.size());
    pid_of.emplace(key, pid);
    pid_name[pid] = (m.rank ? "rank " + std::to_string(*m.rank) : std::string("no rank")) + " (" +
                    (m.host.empty() ? std::string("?") : m.host) + " pid " + std::to_string(proc) + ")";
    return pid;
  };
  uint32_t last_file = UINT32_MAX;  // nodes come in file order: cache the last answer
  int64_t last_proc = 0, last_pid = 0;
  auto pid_for = [&](const Node& n) {
    const FileMeta& m = r.files[n.file].meta;
    const Event* e = r.EventOf(n);
    const int64_t ep = e ? r.files[n.file].ProcessOf(*e) : kNone;
    int64_t proc = ep != kNone ? ep : m.process_id;
    if (n.file == last_file && (m.rank || proc == last_proc)) return last_pid;
    last_file = n.file;
    last_proc = proc;
    last_pid = PidFor(m, proc);
    return last_pid;
  };
  // Tracks by index: one hash lookup per node (a node's track is usually the previous node's
  // or one of a few), names built once per track.
  std::unordered_map<Track, uint32_t, Int64PairHash> track_index;
  std::vector<Track> track_keys;
  // Where each track's slices begin in `grouped` below, track after track; while the nodes are
  // read, track_begin[t + 1] counts track t's slices.
  std::vector<size_t> track_begin{0};
  std::map<Track, std::string> track_name;
  std::vector<Track> lane_tracks;
  Track last_track{INT64_MIN, INT64_MIN};
  uint32_t last_index = 0;
  for (uint32_t i = 0; i < n_nodes; ++i) {
    r.PrefetchEvent(i + kAhead);
    if (track_of[i] == kNoTrack) continue;
    const Node& n = r.nodes[i];
    const Event* e = r.EventOf(n);
    int64_t pid = pid_for(n);
    int64_t tid;
    enum { kGpu, kThread, kSteps } kind;
    const EventExtra* x = IsDeviceLayer(n.layer) && e ? &r.files[n.file].Extra(*e) : nullptr;
    if (x) {
      tid = kGpuTidBase + int64_t(std::max<int>(x->device, 0)) * 100000 + std::max(x->stream, 0);
      kind = kGpu;
    } else if (const int64_t thread = r.ThreadOf(n); thread != kNone) {
      tid = thread;
      kind = kThread;
    } else {
      tid = 0;
      kind = kSteps;
    }
    const Track t{pid, tid};
    if (t != last_track) {
      auto [it, fresh] = track_index.try_emplace(t, uint32_t(track_keys.size()));
      if (fresh) {
        track_keys.push_back(t);
        track_begin.push_back(0);
        track_name.emplace(t, kind == kGpu ? "GPU " + std::to_string(x->device) + " stream " + std::to_string(x->stream)
                              : kind == kThread ? "thread " + std::to_string(tid) : std::string("steps"));
      }
      last_track = t;
      last_index = it->second;
    }
    track_of[i] = last_index;
    ++track_begin[last_index + 1];
  }
  // Every track's nodes in one array, track after track, each in node order (a counting sort:
  // one vector per track grew by doubling and touched up to twice its memory). Times are read
  // from the events when ordering: a copy of (start, end, node) per slice was once the merge's
  // peak. The array is reused for the launch links below (same size: no fresh pages).
  for (size_t ti = 0; ti < track_keys.size(); ++ti) track_begin[ti + 1] += track_begin[ti];
  std::vector<uint32_t> grouped;
  grouped.reserve(n_nodes);
  grouped.resize(track_begin.back());
  {
    std::vector<size_t> fill(track_begin.begin(), track_begin.end() - 1);
    for (uint32_t i = 0; i < n_nodes; ++i)
      if (track_of[i] != kNoTrack) grouped[fill[track_of[i]]++] = i;
  }
  // Lane assignment: lane 0 is the track itself; a slice that cannot nest goes to the first lane
  // where it does. The earliest start seen sets the time origin.
  TimeNs earliest = INT64_MAX;
  for (uint32_t ti = 0; ti < track_keys.size(); ++ti) {
    const Track track = track_keys[ti];
    std::vector<std::vector<TimeNs>> lanes;  // open slice ends per lane (a stack)
    std::vector<uint32_t> lane_id;           // lane -> index into lane_tracks
    ForEachInSliceOrder(r, grouped.data() + track_begin[ti], track_begin[ti + 1] - track_begin[ti],
                        [&](uint32_t node, TimeNs s_start, TimeNs s_end) {
      earliest = std::min(earliest, s_start);
      size_t lane = 0;
      for (;; ++lane) {
        if (lane == lanes.size()) lanes.emplace_back();
        auto& stack = lanes[lane];
        while (!stack.empty() && stack.back() <= s_start) stack.pop_back();
        if (stack.empty() || s_end <= stack.back()) { stack.push_back(s_end); break; }
      }
      if (lane) ++st.moved_to_overflow_track;
      if (lane >= lane_id.size()) lane_id.resize(lane + 1, UINT32_MAX);
      if (lane_id[lane] == UINT32_MAX) {  // each (track, lane) is met in this loop only
        const Track t{track.first, track.second + int64_t(lane) * kOverflowTidStep};
        if (lane) track_name.emplace(t, track_name[track] + " (overlap " + std::to_string(lane) + ")");
        lane_id[lane] = uint32_t(lane_tracks.size());
        lane_tracks.push_back(t);
      }
      track_of[node] = lane_id[lane];
    });
  }
  const TimeNs origin = earliest == INT64_MAX ? 0 : TraceTimeOrigin(earliest);
  st.time_origin_ns = origin;
  // start - origin >= 0; it exceeds int64 only for inputs spanning more than 292 years.
  auto since_origin = [origin](TimeNs t) {
    const uint64_t d = uint64_t(t) - uint64_t(origin);
    return d > uint64_t(INT64_MAX) ? INT64_MAX : TimeNs(d);
  };
  out->Raw("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"truffld-merge\",\"clock\":\"realtime\",\"time_origin_ns\":\"");
  out->Int(origin);
  out->Raw("\"},\"traceEvents\":[\n");
  bool first = true;
  auto sep = [&] { out->Raw(first ? "" : ",\n"); first = false; };
  for (const auto& [pid, name] : pid_name) {
    sep();
    out->Raw("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    out->Int(pid);
    out->Raw(",\"tid\":0,\"args\":{\"name\":");
    out->String(name);
    out->Raw("}}");
  }
  for (const auto& [t, name] : track_name) {
    sep();
    out->Raw("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
    out->Int(t.first);
    out->Raw(",\"tid\":");
    out->Int(t.second);
    out->Raw(",\"args\":{\"name\":");
    out->String(name);
    out->Raw("}}");
  }
  // Names repeat (interned per file): whether one needs escaping is decided once per string.
  InternedJson strings(r, out);
  SliceHeads heads(lane_tracks);
  // Launch -> device flows ride on the slices themselves (flow events v2): the launch slice
  // carries "bind_id" and "flow_out", each of its kernels, copies and memsets "bind_id" and
  // "flow_in", so one launch (a CUDA-graph launch has many) fans out to all its device work
  // without separate "s"/"f" records (they were 22 % of trace.json).
  // launch[i]: for device work, its launch node; kHasWork for a launch with device work (API
  // nodes and device nodes are disjoint, so one table serves both); kNoNode otherwise.
  constexpr uint32_t kHasWork = kNoNode - 1;
  std::vector<uint32_t> launch = std::move(grouped);  // its capacity is n_nodes
  launch.assign(n_nodes, kNoNode);
  for (uint32_t i = 0; i < n_nodes; ++i) {
    const Node& n = r.nodes[i];
    if (!IsApiLayer(n.layer)) continue;
    for (uint32_t c = n.first_child; c != kNoNode; c = r.nodes[c].next_sibling) {
      if (!IsDeviceLayer(r.nodes[c].layer)) continue;
      launch[c] = i;
      launch[i] = kHasWork;
    }
  }
  for (uint32_t i = 0; i < n_nodes; ++i) {
    r.PrefetchEvent(i + kAhead);
    if (track_of[i] == kNoTrack) continue;
    const Node& n = r.nodes[i];
    const Event* e = r.EventOf(n);
    sep();
    out->Raw("{\"ph\":\"X\",\"name\":");
    strings.Write(n.file, e ? e->name : r.NameId(n));
    out->Raw(heads.Get(track_of[i], n.layer));
    const TimeNs start = e ? e->start : r.Start(n), end = e ? e->end : r.End(n);
    out->Micros(since_origin(start));
    out->Raw(",\"dur\":");
    out->Micros(end - start);
    if (const int64_t corr = e ? r.files[n.file].Correlation(*e) : kNone; corr != kNone) {
      out->Raw(",\"args\":{\"correlation\":");
      out->Int(corr);
      out->Raw("}");
    }
    if (launch[i] == kHasWork) {
      out->Raw(",\"bind_id\":");
      out->Int(i);
      out->Raw(",\"flow_out\":true");
    } else if (launch[i] != kNoNode) {
      out->Raw(",\"bind_id\":");
      out->Int(launch[i]);
      out->Raw(",\"flow_in\":true");
      ++st.flows;
    }
    out->Raw("}");
    ++st.slices;
  }
  out->Raw("\n]}\n");
  return st;
}

}  // namespace truffld::merge
