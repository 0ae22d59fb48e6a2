// What both Kineto readers share (see document_parts.h): top-level fields and the end of an import.
#include "importers/kineto/document_parts.h"

#include <charconv>

#include "importers/kineto/event_batches.h"
#include "importers/kineto/rounding.h"
#include "importers/main_process.h"

namespace truffld::merge::kineto {

namespace od = simdjson::ondemand;

namespace {

void ReadDistributedInfo(od::value v, FileMeta* meta) {
  od::object obj;
  if (v.get_object().get(obj) != simdjson::SUCCESS) return;
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return;
    int64_t x = 0;
    if (key == "rank" && field.value().get_int64().get(x) == simdjson::SUCCESS) meta->rank = x;
    if (key == "world_size" && field.value().get_int64().get(x) == simdjson::SUCCESS)
      meta->world_size = x;
  }
}

std::optional<int64_t> ParseBaseTime(std::string_view raw) {
  while (!raw.empty() && IsJsonSpace(raw.back())) raw.remove_suffix(1);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
  if (ec != std::errc() || p != raw.data() + raw.size()) return std::nullopt;
  return v;
}

}  // namespace

size_t FindEventsArray(std::string_view text) {
  constexpr std::string_view kKey = "\"traceEvents\"";
  const size_t key = text.find(kKey);
  if (key == std::string_view::npos) return key;
  size_t i = key + kKey.size();
  while (i < text.size() && IsJsonSpace(text[i])) ++i;
  if (i >= text.size() || text[i] != ':') return std::string_view::npos;
  ++i;
  while (i < text.size() && IsJsonSpace(text[i])) ++i;
  return i < text.size() && text[i] == '[' ? i : std::string_view::npos;
}

size_t ArrayFormOpen(std::string_view text) {
  const size_t i = text.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && text[i] == '[' ? i : std::string_view::npos;
}

void BlankByteOrderMark(char* text, size_t size) {
  if (size >= 3 && text[0] == '\xEF' && text[1] == '\xBB' && text[2] == '\xBF') text[0] = text[1] = text[2] = ' ';
}

TraceFile NewKinetoFile(const std::string& name) {
  TraceFile tf;
  tf.meta.path = name;
  tf.meta.format = "kineto";
  tf.meta.clock = ClockId::kRealtime;
  return tf;
}

bool ReadTopMember(std::string_view key, od::value v, FileMeta* meta, std::optional<int64_t>* base_ns) {
  if (key == "distributedInfo") ReadDistributedInfo(v, meta);
  if (key != "baseTimeNanoseconds") return true;
  *base_ns = ParseBaseTime(v.raw_json_token());
  return base_ns->has_value();
}

Result<TraceFile> FinishImport(TraceFile tf, const Walk& w, std::optional<int64_t> base_ns,
                               const std::string& name, const ImportOptions& options) {
  if (const uint64_t clamped = ClampRoundedEnds(&tf.events)) tf.stats.Add(Problem::kKinetoClampedEnd, clamped);
  if (base_ns && *base_ns != 0) {
    for (Event& e : tf.events) {
      if (__builtin_add_overflow(e.start, *base_ns, &e.start) ||
          __builtin_add_overflow(e.end, *base_ns, &e.end)) {
        tf.stats.Report(name, Problem::kKinetoBadNumber,
                        "baseTimeNanoseconds + ts overflows int64 ns at event #" +
                            std::to_string(tf.LineOf(e)));
      }
    }
  }
  AssignDeviceProcesses(&tf);  // device events carry pid = device in Kineto
  tf.SortThreads();
  for (int k = 0; k < 16; ++k)
    if (w.kept[k]) tf.stats.AddKept(static_cast<EventKind>(k), w.kept[k]);
  tf.stats.Add(Problem::kKinetoTraceEvents, w.index);
  if (options.strict && !tf.stats.issues.empty()) {
    const IngestIssue& i = tf.stats.issues.front();
    return ParseError(i.where + ": " + ProblemKey(i.kind) + ": " + i.message + " (--strict)");
  }
  return tf;
}

}  // namespace truffld::merge::kineto
