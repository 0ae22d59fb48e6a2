// The traceEvents walk (see event_walk.h): one element at a time, read, mapped and stored.
#include "importers/kineto/event_walk.h"

#include <cstring>

#include "importers/kineto/kineto_record.h"

namespace truffld::merge::kineto {
namespace {

namespace od = simdjson::ondemand;

void KeepArgs(const KinetoRecord& rec, Walk* w) {
  if (!w->args) {
    w->out->args.push_back(kNoStr);
  } else if (w->args->Add(rec.args_text, w->index)) {
    CheckArgs(w);
  }
}

void KeepEvent(const KinetoRecord& rec, Mapped& m, Walk* w) {
  const int64_t corr = rec.correlation.value_or(kNone);
  Event& event = m.event;
  w->out->SetCorrelation(event, corr);
  if ((IsApiKind(event.kind) || IsDeviceKind(event.kind)) && corr == kNone)
    w->out->stats.Report(w->loc->Where(Location(*w->doc)), Problem::kKinetoMissingCorrelation,
                         "event #" + std::to_string(w->index) + ": " +
                             std::string(EventKindName(event.kind)) +
                             " without args.correlation (kept, cannot be linked)");
  if (!rec.ignored_field.empty())
    w->out->stats.Report(w->loc->Where(Location(*w->doc)), Problem::kKinetoIgnoredField,
                         "event #" + std::to_string(w->index) + ": args." +
                             std::string(rec.ignored_field) +
                             " has the wrong JSON type; field ignored, event kept");
  ++w->kept[static_cast<int>(event.kind)];
  w->out->SetExtra(event, m.extra);
  w->out->SetThread(event, m.host.process_id, m.host.thread_id);
  w->out->AddEvent(event, w->index);
  KeepArgs(rec, w);
}

// The number of '\n' in [p, p + n), 16 bytes at a time (GCC/Clang vector extensions: SSE2,
// NEON or plain code, whatever the target has). Lines are counted in every byte of a streamed
// document, which a byte at a time cost 15 ms for a 53 MB trace and this about 1.5 ms.
uint64_t CountNewlines(const char* p, size_t n) {
  typedef unsigned char Bytes16 __attribute__((vector_size(16)));
  uint64_t count = 0;
  size_t i = 0;
  while (n - i >= 16) {
    Bytes16 sum = {};  // per lane, at most 255 blocks before it is added up
    for (int k = 0; k < 255 && n - i >= 16; ++k, i += 16) {
      Bytes16 v;
      std::memcpy(&v, p + i, 16);
      sum -= reinterpret_cast<Bytes16>(v == '\n');  // a match is all ones, -1
    }
    for (int lane = 0; lane < 16; ++lane) count += sum[lane];
  }
  for (; i < n; ++i) count += p[i] == '\n';
  return count;
}

}  // namespace

void Locator::CountTo(uint64_t off) {
  line_ += CountNewlines(doc_.data() + (last_ - base_), static_cast<size_t>(off - last_));
  last_ = off;
}

std::string Locator::Where(const char* p) {
  uint64_t off = (p && p >= doc_.data() && p <= doc_.data() + doc_.size())
                     ? base_ + static_cast<uint64_t>(p - doc_.data())
                     : last_;
  if (off > last_) CountTo(off);
  return name_ + ":" + std::to_string(line_) + " (byte " + std::to_string(last_) + ")";
}

void Locator::Slide(uint64_t base) {
  if (base > last_) CountTo(base);
  base_ = base;
}

const char* Location(od::document& doc) {
  const char* p = nullptr;
  if (doc.current_location().get(p) != simdjson::SUCCESS) return nullptr;
  return p;
}

void CheckArgs(Walk* w, bool hold) {
  for (const KeptArgs::Rejected& r : w->args->Check())
    w->held_args.emplace_back(w->args_loc->Where(r.where),
                              "event #" + std::to_string(r.event_number) +
                                  ": args is not a valid JSON object; not kept in trace.json, event kept");
  if (hold) return;
  for (auto& [where, message] : w->held_args)
    w->out->stats.Report(std::move(where), Problem::kKinetoIgnoredField, std::move(message));
  w->held_args.clear();
}

simdjson::error_code WalkEvents(od::array events, Walk* w) {
  for (auto item : events) {
    ++w->index;
    od::object obj;
    if (auto e = item.get_object().get(obj)) {
      if (e != simdjson::INCORRECT_TYPE) return e;
      w->out->stats.Report(w->loc->Where(Location(*w->doc)), Problem::kKinetoNotAnObject,
                           "traceEvents element #" + std::to_string(w->index) +
                               " is not a JSON object");
      continue;
    }
    if (auto e = WalkObject(obj, w)) return e;
  }
  return simdjson::SUCCESS;
}

simdjson::error_code WalkObject(od::object obj, Walk* w) {
  KinetoRecord rec;
  if (auto e = ReadKinetoRecord(obj, &rec)) return e;
  Mapped m = MapKinetoRecord(rec, &w->out->strings);
  switch (m.what) {
    case Disposition::kSkip:
      w->out->stats.Add(m.key);
      break;
    case Disposition::kProblem:
      w->out->stats.Report(w->loc->Where(Location(*w->doc)), m.key,
                           "event #" + std::to_string(w->index) + ": " + m.message);
      break;
    case Disposition::kEvent:
      KeepEvent(rec, m, w);
      break;
  }
  return simdjson::SUCCESS;
}

}  // namespace truffld::merge::kineto
