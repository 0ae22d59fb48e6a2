// trace.json writer (Chrome trace event format, loads in Perfetto and chrome://tracing).
//
// Layout: one process per rank (pid = rank, or 1000000 + n for files without a rank), one
// track per host thread (tid = OS thread id) and per GPU stream (tid = 2000000000 + device *
// 100000 + stream, named "GPU d stream s"). Complete slices ("X") for every tree node, flow
// arrows from each launch call to its device work as "bind_id" + "flow_out"/"flow_in" on the
// slices themselves (flow events v2, as Perfetto reads them). Slice names and args (step
// facts, operators named by family, the importer's own args) are trace_args.h's.
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

#include "writers/slice_order.h"
#include "writers/trace_args.h"
#include "truffld/merge/writers.h"

namespace truffld::merge {
namespace {

constexpr int64_t kGpuTidBase = 2000000000;
constexpr int64_t kStepsTid = 0;                         // each process's "steps" track
constexpr int64_t kNoThreadTid = kGpuTidBase - 1;        // host calls whose thread is unknown
constexpr int64_t kOverflowTidStep = 100000000;

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

namespace {

constexpr uint32_t kNoTrack = UINT32_MAX;

// The trace's tracks. Each node's track: while tracks are gathered its track's index into
// `keys`, then its final track (its track, or an overflow lane of it) as an index into `lanes`:
// 4 bytes a node instead of a 16-byte (pid, tid) pair. Horizontal roots duplicate their step:
// kNoTrack, never written.
class TraceTracks {
 public:
  explicit TraceTracks(const MergeResult& r) : r_(r), track_of_(r.nodes.size(), 0) {
    for (const Tree& t : r.trees)
      if (t.view == View::kHorizontal) track_of_[t.root] = kNoTrack;
  }

  // Every node's track, then each track's slices in slice order, moved to overflow lanes where
  // they cannot nest. Returns the node array it used, for reuse.
  std::vector<uint32_t> Assign(TraceStats* st) {
    GatherTracks();
    std::vector<uint32_t> grouped = GroupByTrack();
    for (uint32_t ti = 0; ti < keys_.size(); ++ti) AssignLanes(ti, grouped, st);
    return grouped;
  }

  uint32_t LaneOf(uint32_t node) const { return track_of_[node]; }
  const std::vector<Track>& lanes() const { return lanes_; }
  const std::map<int64_t, std::string>& pid_names() const { return pid_name_; }
  const std::map<Track, std::string>& track_names() const { return track_name_; }
  // The track an overflow lane belongs to and the lane's number ({t, 0} for a track itself).
  std::pair<Track, int64_t> BaseOf(const Track& t) const {
    auto it = lane_base_.find(t);
    return it == lane_base_.end() ? std::make_pair(t, int64_t{0}) : it->second;
  }
  TimeNs earliest() const { return earliest_; }

 private:
  int64_t PidFor(const FileMeta& m, int64_t proc) {
    auto key = m.rank ? std::make_pair(0, *m.rank) : std::make_pair(1, proc);
    auto it = pid_of_.find(key);
    if (it != pid_of_.end()) return it->second;
    int64_t pid = m.rank ? *m.rank : 1000000 + int64_t(pid_of_.size());
    pid_of_.emplace(key, pid);
    main_thread_[pid] = proc;  // Linux: the main thread's id is the process id
    pid_name_[pid] = (m.rank ? "rank " + std::to_string(*m.rank) : std::string("no rank")) + " (" +
                     (m.host.empty() ? std::string("?") : m.host) + " pid " + std::to_string(proc) + ")";
    return pid;
  }

  // Nodes come in file order: the last answer is kept.
  int64_t PidOfNode(const Node& n) {
    const FileMeta& m = r_.files[n.file].meta;
    const Event* e = r_.EventOf(n);
    const int64_t ep = e ? r_.files[n.file].ProcessOf(*e) : kNone;
    const int64_t proc = ep != kNone ? ep : m.process_id;
    if (n.file == last_file_ && (m.rank || proc == last_proc_)) return last_pid_;
    last_file_ = n.file;
    last_proc_ = proc;
    last_pid_ = PidFor(m, proc);
    return last_pid_;
  }

  // A node's track, and the track's name the first time it is met.
  Track TrackOfNode(const Node& n, std::string* name) {
    const int64_t pid = PidOfNode(n);
    const Event* e = r_.EventOf(n);
    if (const EventExtra* x = IsDeviceLayer(n.layer) && e ? &r_.files[n.file].Extra(*e) : nullptr) {
      if (name) *name = "GPU " + std::to_string(x->device) + " stream " + std::to_string(x->stream);
      return {pid, kGpuTidBase + int64_t(std::max<int>(x->device, 0)) * 100000 + std::max(x->stream, 0)};
    }
    if (n.layer == Layer::kStep) {  // steps on their own track, above the threads
      if (name) *name = "steps";
      return {pid, kStepsTid};
    }
    if (const int64_t thread = r_.ThreadOf(n); thread != kNone) {
      if (name) *name = (thread == main_thread_[pid] ? "main thread " : "thread ") + std::to_string(thread);
      return {pid, thread};
    }
    if (name) *name = "host calls (thread not recorded)";
    return {pid, kNoThreadTid};
  }

  // Tracks by index: one hash lookup per node (a node's track is usually the previous node's),
  // names built once per track; track_begin_[t + 1] counts track t's slices.
  void GatherTracks() {
    std::unordered_map<Track, uint32_t, Int64PairHash> index;
    Track last{INT64_MIN, INT64_MIN};
    uint32_t last_index = 0;
    std::string name;
    for (uint32_t i = 0; i < track_of_.size(); ++i) {
      r_.PrefetchEvent(i + kAhead);
      if (track_of_[i] == kNoTrack) continue;
      const Node& n = r_.nodes[i];
      const Track t = TrackOfNode(n, nullptr);
      if (t != last) {
        auto [it, fresh] = index.try_emplace(t, uint32_t(keys_.size()));
        if (fresh) {
          keys_.push_back(t);
          track_begin_.push_back(0);
          TrackOfNode(n, &name);
          track_name_.emplace(t, name);
        }
        last = t;
        last_index = it->second;
      }
      track_of_[i] = last_index;
      ++track_begin_[last_index + 1];
    }
  }

  // Every track's nodes in one array, track after track, each in node order (a counting sort).
  std::vector<uint32_t> GroupByTrack() {
    for (size_t ti = 0; ti < keys_.size(); ++ti) track_begin_[ti + 1] += track_begin_[ti];
    std::vector<uint32_t> grouped;
    grouped.reserve(track_of_.size());
    grouped.resize(track_begin_.back());
    std::vector<size_t> fill(track_begin_.begin(), track_begin_.end() - 1);
    for (uint32_t i = 0; i < track_of_.size(); ++i)
      if (track_of_[i] != kNoTrack) grouped[fill[track_of_[i]]++] = i;
    return grouped;
  }

  // Lane 0 is the track itself; a slice that cannot nest goes to the first lane where it does.
  void AssignLanes(uint32_t ti, const std::vector<uint32_t>& grouped, TraceStats* st) {
    const Track track = keys_[ti];
    std::vector<std::vector<TimeNs>> lanes;  // open slice ends per lane (a stack)
    std::vector<uint32_t> lane_id;           // lane -> index into lanes_
    ForEachInSliceOrder(r_, grouped.data() + track_begin_[ti], track_begin_[ti + 1] - track_begin_[ti],
                        [&](uint32_t node, TimeNs s_start, TimeNs s_end) {
      earliest_ = std::min(earliest_, s_start);
      size_t lane = 0;
      for (;; ++lane) {
        if (lane == lanes.size()) lanes.emplace_back();
        auto& stack = lanes[lane];
        while (!stack.empty() && stack.back() <= s_start) stack.pop_back();
        if (stack.empty() || s_end <= stack.back()) { stack.push_back(s_end); break; }
      }
      if (lane) ++st->moved_to_overflow_track;
      if (lane >= lane_id.size()) lane_id.resize(lane + 1, UINT32_MAX);
      if (lane_id[lane] == UINT32_MAX) {  // each (track, lane) is met in this loop only
        const Track t{track.first, track.second + int64_t(lane) * kOverflowTidStep};
        if (lane) {
          track_name_.emplace(t, track_name_[track] + " (overlap " + std::to_string(lane) + ")");
          lane_base_.emplace(t, std::make_pair(track, int64_t(lane)));
        }
        lane_id[lane] = uint32_t(lanes_.size());
        lanes_.push_back(t);
      }
      track_of_[node] = lane_id[lane];
    });
  }

  const MergeResult& r_;
  std::vector<uint32_t> track_of_;
  std::vector<Track> keys_;              // tracks in the order first met
  std::vector<size_t> track_begin_{0};   // where each track's slices begin in the grouped array
  std::vector<Track> lanes_;             // (track, lane) pairs as (pid, tid)
  std::map<std::pair<int, int64_t>, int64_t> pid_of_;  // (has_rank?0:1, rank|process) -> pid
  std::map<int64_t, std::string> pid_name_;
  std::map<int64_t, int64_t> main_thread_;  // pid -> its process's id (= its main thread's)
  std::map<Track, std::string> track_name_;
  std::map<Track, std::pair<Track, int64_t>> lane_base_;  // overflow lane -> (its track, lane)
  uint32_t last_file_ = UINT32_MAX;
  int64_t last_proc_ = 0, last_pid_ = 0;
  TimeNs earliest_ = INT64_MAX;
};

// Each process's tracks in the order a reader wants them: steps, the main thread, the other
// threads (by id), host calls without a thread, then GPU streams (by device and stream); an
// overflow lane right after its track.
std::map<Track, int64_t> TrackOrder(const TraceTracks& tracks) {
  using Key = std::tuple<int64_t, int, int64_t, int64_t>;  // pid, group, base tid, lane
  std::vector<std::pair<Key, Track>> keys;
  for (const auto& [t, name] : tracks.track_names()) {
    const auto [base, lane] = tracks.BaseOf(t);
    const std::string& base_name = tracks.track_names().at(base);
    const int group = base.second == kStepsTid ? 0 : base_name.rfind("main thread ", 0) == 0 ? 1
                      : base.second < kNoThreadTid ? 2 : base.second == kNoThreadTid ? 3 : 4;
    keys.push_back({{t.first, group, base.second, lane}, t});
  }
  std::sort(keys.begin(), keys.end());
  std::map<Track, int64_t> order;
  for (size_t i = 0; i < keys.size(); ++i) order[keys[i].second] = int64_t(i);
  return order;
}

void WriteMetadata(const TraceTracks& tracks, TimeNs origin, JsonOut* out, bool* first) {
  out->Raw("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"truffld-merge\",\"clock\":\"realtime\",\"time_origin_ns\":\"");
  out->Int(origin);
  out->Raw("\"},\"traceEvents\":[\n");
  auto sep = [&] { out->Raw(*first ? "" : ",\n"); *first = false; };
  for (const auto& [pid, name] : tracks.pid_names()) {
    sep();
    out->Raw("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    out->Int(pid);
    out->Raw(",\"tid\":0,\"args\":{\"name\":");
    out->String(name);
    out->Raw("}}");
  }
  const std::map<Track, int64_t> order = TrackOrder(tracks);
  for (const auto& [t, name] : tracks.track_names()) {
    for (const bool sort : {false, true}) {
      sep();
      out->Raw(sort ? "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":"
                    : "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
      out->Int(t.first);
      out->Raw(",\"tid\":");
      out->Int(t.second);
      out->Raw(sort ? ",\"args\":{\"sort_index\":" : ",\"args\":{\"name\":");
      if (sort) out->Int(order.at(t)); else out->String(name);
      out->Raw("}}");
    }
  }
}

// Launch -> device flows ride on the slices themselves (flow events v2): launch[i] is, for
// device work, its launch node; kHasWork for a launch with device work (API and device nodes
// are disjoint, so one table serves both); kNoNode otherwise. `launch` is reused memory.
constexpr uint32_t kHasWork = kNoNode - 1;
void LinkLaunches(const MergeResult& r, std::vector<uint32_t>* launch) {
  launch->assign(r.nodes.size(), kNoNode);
  for (uint32_t i = 0; i < r.nodes.size(); ++i) {
    const Node& n = r.nodes[i];
    if (!IsApiLayer(n.layer)) continue;
    for (uint32_t c = n.first_child; c != kNoNode; c = r.nodes[c].next_sibling) {
      if (!IsDeviceLayer(r.nodes[c].layer)) continue;
      (*launch)[c] = i;
      (*launch)[i] = kHasWork;
    }
  }
}

void WriteSlices(const MergeResult& r, const TraceTracks& tracks, const std::vector<uint32_t>& launch, TimeNs origin,
                 JsonOut* out, bool first, TraceStats* st) {
  // start - origin >= 0; it exceeds int64 only for inputs spanning more than 292 years.
  auto since_origin = [origin](TimeNs t) {
    const uint64_t d = uint64_t(t) - uint64_t(origin);
    return d > uint64_t(INT64_MAX) ? INT64_MAX : TimeNs(d);
  };
  SliceNamer namer(r, out);
  SliceHeads heads(tracks.lanes());
  for (uint32_t i = 0; i < r.nodes.size(); ++i) {
    r.PrefetchEvent(i + kAhead);
    if (tracks.LaneOf(i) == kNoTrack) continue;
    const Node& n = r.nodes[i];
    const Event* e = r.EventOf(n);
    out->Raw(first ? "{\"ph\":\"X\",\"name\":" : ",\n{\"ph\":\"X\",\"name\":");
    first = false;
    namer.Name(i, n, e);
    out->Raw(heads.Get(tracks.LaneOf(i), n.layer));
    out->Micros(since_origin(n.start));
    out->Raw(",\"dur\":");
    out->Micros(n.end - n.start);
    namer.Args(i, n, e);
    if (launch[i] == kHasWork) {
      out->Raw(",\"bind_id\":");
      out->Int(i);
      out->Raw(",\"flow_out\":true");
    } else if (launch[i] != kNoNode) {
      out->Raw(",\"bind_id\":");
      out->Int(launch[i]);
      out->Raw(",\"flow_in\":true");
      ++st->flows;
    }
    out->Raw("}");
    ++st->slices;
  }
}

}  // namespace

TraceStats WriteChromeTrace(const MergeResult& r, JsonOut* out) {
  TraceStats st;
  TraceTracks tracks(r);
  std::vector<uint32_t> reuse = tracks.Assign(&st);  // its capacity is one slot a node
  const TimeNs origin = tracks.earliest() == INT64_MAX ? 0 : TraceTimeOrigin(tracks.earliest());
  st.time_origin_ns = origin;
  bool first = true;
  WriteMetadata(tracks, origin, out, &first);
  LinkLaunches(r, &reuse);
  WriteSlices(r, tracks, reuse, origin, out, first, &st);
  out->Raw("\n]}\n");
  return st;
}

}  // namespace truffld::merge
