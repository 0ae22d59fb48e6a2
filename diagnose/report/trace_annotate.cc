// diagnosis.trace.json: the merge trace with the diagnosis overlay (see trace_annotate.h).
#include "report/trace_annotate.h"

#include <charconv>
#include <memory>
#include <unordered_map>
#include <vector>

#include "truffld/json_escape.h"
#include "truffld/line_reader.h"
#include "report/trace_sink.h"

namespace truffld::diagnose {
namespace {

constexpr std::string_view kHeadPrefix = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"truffld-merge\"";
constexpr std::string_view kAnnotated = ",\"annotated_by\":\"truffld-diagnose\"";

// Reads `"key":` at `*p` followed by an integer; advances *p past it.
bool IntField(std::string_view s, size_t* p, std::string_view key, int64_t* out) {
  if (s.compare(*p, key.size(), key) != 0) return false;
  *p += key.size();
  auto [end, ec] = std::from_chars(s.data() + *p, s.data() + s.size(), *out);
  if (ec != std::errc()) return false;
  *p = size_t(end - s.data());
  return true;
}

// Reads `"key":` followed by a number in microseconds; advances *p past it.
bool MicrosField(std::string_view s, size_t* p, std::string_view key, int64_t* ns) {
  if (s.compare(*p, key.size(), key) != 0) return false;
  *p += key.size();
  const size_t end = s.find_first_of(",}", *p);
  if (end == std::string_view::npos) return false;
  const auto v = MicrosTextToNs(s.substr(*p, end - *p));
  if (!v) return false;
  *ns = *v;
  *p = end;
  return true;
}

// The overlay's lookups by trace time (ns since the origin).
struct Lookup {
  std::unordered_multimap<int64_t, uint32_t> targets, steps;
  std::vector<std::string> family_json;  // per target: its family as written in a name
  std::vector<uint64_t> flow_of;         // per target: its flow id (0: not linked yet)
  // One bit per hash of the times in targets and steps: a clear bit rules a slice out without
  // the maps (most slices of a trace are neither a target nor a step).
  static constexpr int kFilterBits = 20;
  std::vector<uint64_t> filter = std::vector<uint64_t>(size_t{1} << (kFilterBits - 6));
  static size_t Bit(int64_t ts) { return size_t((uint64_t(ts) * 0x9E3779B97F4A7C15ull) >> (64 - kFilterBits)); }
  void Note(int64_t ts) { filter[Bit(ts) >> 6] |= uint64_t{1} << (Bit(ts) & 63); }
  bool Maybe(int64_t ts) const { return (filter[Bit(ts) >> 6] >> (Bit(ts) & 63)) & 1; }
};

Lookup Index(const TraceOverlay& o, int64_t origin) {
  Lookup l;
  for (uint32_t k = 0; k < o.targets.size(); ++k) {
    l.targets.emplace(o.targets[k].start_ns - origin, k);
    l.Note(o.targets[k].start_ns - origin);
    l.family_json.push_back(JsonEscaped(o.targets[k].family));
  }
  l.flow_of.assign(o.targets.size(), 0);
  for (uint32_t k = 0; k < o.steps.size(); ++k) {
    l.steps.emplace(o.steps[k].start_ns - origin, k);
    l.Note(o.steps[k].start_ns - origin);
  }
  return l;
}

// False when the line cannot be a target or a step: its first `,"ts":` (in a slice
// ParseSliceHead accepts, the slice's own: a name or category cannot hold `,"` unescaped) has
// a time the filter rules out, or none. Most lines of a trace end here, without the full parse.
bool MaybeOverlaid(std::string_view line, const Lookup& l) {
  constexpr std::string_view kTs = ",\"ts\":";
  size_t p = line.find(kTs);
  int64_t ts = 0;
  return p != std::string_view::npos && MicrosField(line, &p, kTs, &ts) && l.Maybe(ts);
}

bool RankMatches(const std::optional<int64_t>& rank, int64_t pid) { return !rank || *rank == pid; }

// The line with `insert` placed before its last `}` (the event's), or before the one before
// it (`inside_args`: the args object's).
std::string Insert(std::string_view line, std::string_view insert, bool inside_args) {
  const size_t at = line.size() - (inside_args ? 2 : 1);
  std::string out(line.substr(0, at));
  out += insert;
  out += line.substr(at);
  return out;
}

// One merge event line (without its trailing ','), annotated where it matches; nullopt when it
// is copied as it is (most lines: no copy made).
std::optional<std::string> AnnotateLine(std::string_view line, const TraceOverlay& o, Lookup* l, AnnotateStats* st) {
  if (!MaybeOverlaid(line, *l)) return std::nullopt;  // the filter has seen this slice's ts
  size_t rest = 0;
  const auto s = ParseSliceHead(line, &rest);
  if (!s) return std::nullopt;
  if (s->cat == "step") {
    auto [b, e] = l->steps.equal_range(s->ts_ns);
    for (auto it = b; it != e && s->has_args; ++it) {
      const StepVerdict& v = o.steps[it->second];
      if (!RankMatches(v.rank, s->pid)) continue;
      std::string add;
      if (!v.vertical.empty()) add += ",\"verdict_vertical\":\"" + v.vertical + "\"";
      if (!v.horizontal.empty()) add += ",\"verdict_horizontal\":\"" + v.horizontal + "\"";
      ++st->steps_annotated;
      return Insert(line, add, true);
    }
    return std::nullopt;
  }
  // A slice that already has a flow is left alone (searched for only at a target's time).
  auto [b, e] = l->targets.equal_range(s->ts_ns);
  if (b == e || SliceHasFlow(line, rest)) return std::nullopt;
  for (auto it = b; it != e; ++it) {
    const OperatorTarget& t = o.targets[it->second];
    if (l->flow_of[it->second] || t.end_ns - t.start_ns != s->dur_ns || s->name != l->family_json[it->second] ||
        !RankMatches(t.rank, s->pid))
      continue;
    const uint64_t id = kOverlayFlowBase + it->second;
    l->flow_of[it->second] = id;
    ++st->flows;
    return Insert(line, ",\"bind_id\":" + std::to_string(id) + ",\"flow_out\":true", false);
  }
  return std::nullopt;
}

// Why a faulty-operator marker has no flow arrow to an operator slice (its args' "no_flow").
constexpr const char* kWhyUnlinked =
    "no slice of trace.json has this operator's start, duration and name on this rank "
    "(the trace comes from another merge, or from an older truffld-merge)";
constexpr const char* kWhyOutside =
    "time no operator range covers (a host gap inside the step, the time between steps, or a "
    "call directly under the step): there is no operator slice to point at; see the step's "
    "slices at this time";
constexpr const char* kWhyReplayed =
    "device work of a CUDA-graph replay: the graph launch is one slice, its kernels have no "
    "operator slice of their own; see the cudaGraphLaunch slice and the GPU stream at this time";

std::string Event(std::string_view ph, std::string_view name, uint32_t tid, const std::string& rest) {
  std::string e = "{\"ph\":\"";
  e += ph;
  e += "\",\"name\":";
  AppendJsonString(&e, name);
  e += ",\"pid\":" + std::to_string(kDiagnosisPid) + ",\"tid\":" + std::to_string(tid) + rest + "}";
  return e;
}

// The overlay's process, tracks and slices, each preceded by ",\n" (`first`: none before the first).
void WriteOverlay(const TraceOverlay& o, int64_t origin, const Lookup& l, bool first, TraceSink* w, AnnotateStats* st) {
  auto put = [&](const std::string& e) {
    w->Put(first ? "" : ",\n");
    w->Put(e);
    first = false;
  };
  put(Event("M", "process_name", 0, ",\"args\":{\"name\":\"truffld diagnosis\"}"));
  put(Event("M", "process_sort_index", 0, ",\"args\":{\"sort_index\":-1}"));
  for (uint32_t t = 0; t < o.tracks.size(); ++t) {
    std::string args = ",\"args\":{\"name\":";
    AppendJsonString(&args, o.tracks[t].name);
    put(Event("M", "thread_name", t + 1, args + "}"));
  }
  for (const OverlaySlice& s : o.slices) {
    const bool linked = s.target >= 0 && l.flow_of[size_t(s.target)];
    const char* why = nullptr;  // a marker without a flow says why
    if (s.target >= 0 && !linked) {
      ++st->markers_unlinked;
      why = kWhyUnlinked;
    } else if (s.marker && s.outside) {
      ++st->markers_outside;
      why = kWhyOutside;
    } else if (s.marker && s.target < 0) {
      ++st->markers_replayed;
      why = kWhyReplayed;
    }
    auto dump = [](const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); };
    std::string args_text;
    if (why) {  // only a marker without a flow needs a copy of its args
      nlohmann::json args = s.args;
      args["no_flow"] = why;
      args_text = dump(args);
    } else {
      args_text = dump(s.args);
    }
    std::string rest = ",\"cat\":\"truffld_diagnosis\",\"ts\":" + NsToMicrosText(s.start_ns - origin) +
                       ",\"dur\":" + NsToMicrosText(s.end_ns - s.start_ns) + ",\"args\":" + args_text;
    if (!s.cname.empty()) rest += ",\"cname\":\"" + s.cname + "\"";
    if (linked) rest += ",\"bind_id\":" + std::to_string(l.flow_of[size_t(s.target)]) + ",\"flow_in\":true";
    put(Event("X", s.name, s.track + 1, rest));
  }
}

}  // namespace

std::optional<int64_t> MicrosTextToNs(std::string_view t) {
  const bool neg = !t.empty() && t.front() == '-';
  if (neg) t.remove_prefix(1);
  const size_t dot = t.find('.');
  const std::string_view whole = t.substr(0, dot), frac = dot == std::string_view::npos ? "" : t.substr(dot + 1);
  if (whole.empty() || frac.size() > 3 || whole.size() > 15 || (dot != std::string_view::npos && frac.empty())) return std::nullopt;
  int64_t v = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  for (size_t i = 0; i < 3; ++i) {
    const char c = i < frac.size() ? frac[i] : '0';
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return neg ? -v : v;
}

std::string NsToMicrosText(int64_t ns) {
  const bool neg = ns < 0;
  const uint64_t u = neg ? 0 - uint64_t(ns) : uint64_t(ns);
  const uint64_t f = u % 1000;
  std::string s = (neg ? "-" : "") + std::to_string(u / 1000) + ".";
  s += char('0' + f / 100);
  s += char('0' + f / 10 % 10);
  s += char('0' + f % 10);
  return s;
}

std::optional<SliceLine> ParseSliceLine(std::string_view s) {
  size_t rest = 0;
  auto out = ParseSliceHead(s, &rest);
  if (out) out->has_flow = SliceHasFlow(s, rest);
  return out;
}

bool SliceHasFlow(std::string_view s, size_t rest) { return s.find("\"bind_id\":", rest) != std::string_view::npos; }

std::optional<SliceLine> ParseSliceHead(std::string_view s, size_t* rest) {
  constexpr std::string_view kStart = "{\"ph\":\"X\",\"name\":\"";
  if (s.size() < kStart.size() + 2 || s.compare(0, kStart.size(), kStart) != 0 || s.back() != '}') return std::nullopt;
  SliceLine out;
  size_t p = kStart.size();
  for (;; ++p) {  // the name's closing quote: one not escaped
    p = s.find('"', p);
    if (p == std::string_view::npos) return std::nullopt;
    size_t backslashes = 0;
    while (backslashes < p && s[p - 1 - backslashes] == '\\') ++backslashes;
    if (backslashes % 2 == 0) break;
  }
  out.name = s.substr(kStart.size(), p - kStart.size());
  constexpr std::string_view kCat = "\",\"cat\":\"";
  if (s.compare(p, kCat.size(), kCat) != 0) return std::nullopt;
  p += kCat.size();
  const size_t cat_end = s.find('"', p);
  if (cat_end == std::string_view::npos) return std::nullopt;
  out.cat = s.substr(p, cat_end - p);
  p = cat_end + 1;
  if (!IntField(s, &p, ",\"pid\":", &out.pid) || !IntField(s, &p, ",\"tid\":", &out.tid) ||
      !MicrosField(s, &p, ",\"ts\":", &out.ts_ns) || !MicrosField(s, &p, ",\"dur\":", &out.dur_ns))
    return std::nullopt;
  out.has_args = s.compare(p, 9, ",\"args\":{") == 0 && s.size() >= 2 && s[s.size() - 2] == '}';
  *rest = p;
  return out;
}

Result<int64_t> TraceTimeOrigin(std::string_view head) {
  if (head.compare(0, kHeadPrefix.size(), kHeadPrefix) != 0)
    return ParseError("not a trace.json written by truffld-merge (its first line is not the merge's head)");
  if (head.find(kAnnotated) != std::string_view::npos)
    return ParseError("already annotated by truffld-diagnose; give the merge's own trace.json");
  constexpr std::string_view kOrigin = "\"time_origin_ns\":\"";
  const size_t at = head.find(kOrigin);
  int64_t origin = 0;
  if (at == std::string_view::npos) return ParseError("no otherData.time_origin_ns in the head");
  const char* b = head.data() + at + kOrigin.size();
  auto [end, ec] = std::from_chars(b, head.data() + head.size(), origin);
  if (ec != std::errc() || end == head.data() + head.size() || *end != '"') return ParseError("bad otherData.time_origin_ns");
  // truffld-merge writes a whole second at or before the first slice: never negative, and far
  // enough from the int64 limits that ns +/- origin cannot overflow.
  if (origin < 0 || origin > (int64_t{1} << 62)) return ParseError("otherData.time_origin_ns out of range");
  return origin;
}

Status AnnotateTrace(const std::string& in_path, const TraceOverlay& o, const std::string& out_path,
                     AnnotateStats* st) {
  st->input_error = true;  // until the output is opened, every failure is the input's
  auto reader = LineReader::Open(in_path);
  if (!reader.ok()) return reader.status();
  LineReader& in = **reader;
  std::string_view line;
  if (!in.Next(&line)) return in.status().ok() ? ParseError(in_path + ": empty") : in.status();
  auto origin = TraceTimeOrigin(line);
  if (!origin.ok()) return ParseError(in_path + ": " + origin.status().message());
  st->time_origin_ns = *origin;
  st->input_error = false;
  auto sink = TraceSink::Open(out_path);
  if (!sink.ok()) return sink.status();
  TraceSink& w = **sink;
  w.Put(line.substr(0, kHeadPrefix.size()));
  w.Put(kAnnotated);
  w.Put(line.substr(kHeadPrefix.size()));
  w.Put("\n");
  Lookup l = Index(o, *origin);
  bool closed = false, first = true;
  while (in.Next(&line)) {
    if (line == "]}") {
      closed = true;
      break;
    }
    if (line.empty()) continue;  // a trace with no events: "[\n\n]}"
    if (line.back() == ',') line.remove_suffix(1);
    const std::optional<std::string> changed = AnnotateLine(line, o, &l, st);
    if (!first) w.Put(",\n");
    w.Put(changed ? std::string_view(*changed) : line);
    first = false;
    ++st->events;
  }
  st->input_error = true;
  if (!in.status().ok()) return in.status();
  if (!closed) return ParseError(in.Where() + ": the trace ends before its closing \"]}\" (cut short?)");
  if (in.long_lines_skipped() > 0)
    return ParseError(in_path + ": " + std::to_string(in.long_lines_skipped()) +
                      " line(s) too long to copy; not a trace truffld-merge wrote");
  st->input_error = false;
  WriteOverlay(o, *origin, l, first, &w, st);
  w.Put("\n]}\n");
  return w.Finish();
}

}  // namespace truffld::diagnose
