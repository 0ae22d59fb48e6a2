// summary.json end states -> RankEnd (end_states.h).
#include "hang/end_states.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "truffld/json_get.h"

namespace truffld::diagnose {
namespace {

using nlohmann::json;

// Typed reads (truffld/json_get.h) of one file's entry: a member of the wrong type gives the
// default and is kept as the first error, which ParseEndStates returns.
class EntryReader {
 public:
  explicit EntryReader(std::string where) : where_(std::move(where)) {}
  int64_t Int(const json& j, const char* key, int64_t def = -1) { return Keep(truffld::json::GetInt(j, key, def, where_), def); }
  uint64_t Count(const json& j, const char* key) { return uint64_t(std::max<int64_t>(0, Int(j, key, 0))); }
  std::string Str(const json& j, const char* key) { return Keep(truffld::json::GetString(j, key, "", where_), std::string()); }
  bool Bool(const json& j, const char* key, bool def) { return Keep(truffld::json::GetBool(j, key, def, where_), def); }
  const json& Array(const json& j, const char* key) {
    static const json kEmpty = json::array();
    const json* a = Keep(truffld::json::GetArray(j, key, where_), static_cast<const json*>(nullptr));
    return a ? *a : kEmpty;
  }
  const Status& status() const { return status_; }

 private:
  template <class T>
  T Keep(Result<T> r, T def) {
    if (r.ok()) return std::move(r).value();
    if (status_.ok()) status_ = ParseError(r.status().message());
    return def;
  }
  std::string where_;
  Status status_;
};

RankEnd ParseOne(const json& f, const json& e, size_t index, EntryReader& in) {
  RankEnd r;
  r.file = index;
  r.path = in.Str(f, "path");
  r.host = in.Str(f, "host");
  r.rank = in.Int(f, "rank");
  r.process_id = in.Int(f, "process_id");
  r.clean_exit = in.Bool(e, "clean_exit", true);
  r.stats_record = in.Bool(e, "stats_record", false);
  r.truncated_last_line = in.Bool(e, "truncated_last_line", false);
  r.last_event_ns = in.Int(e, "last_event_ns", 0);
  r.last_alive_ns = std::max(r.last_event_ns, in.Int(e, "last_alive_ns", 0));
  r.steps_entered = in.Count(e, "steps_entered");
  r.last_step = in.Str(e, "last_step");
  r.last_step_start_ns = in.Int(e, "last_step_start_ns", 0);
  r.last_step_open = in.Bool(e, "last_step_open", false);
  for (const json& o : in.Array(e, "open_ranges"))
    r.open.push_back({in.Str(o, "name"), in.Str(o, "layer"), in.Int(o, "start_ns", 0), in.Int(o, "thread_id")});
  for (const json& c : in.Array(e, "collectives"))
    r.collectives.push_back({in.Str(c, "communicator"), in.Str(c, "op"), in.Count(c, "entered"), in.Int(c, "bytes"),
                             in.Int(c, "world_size"), in.Int(c, "last_start_ns", 0), in.Int(c, "last_end_ns", 0),
                             in.Bool(c, "last_open", false)});
  r.pending_launches = in.Count(e, "pending_launches");
  for (const json& p : in.Array(e, "first_pending_launches"))
    r.first_pending.push_back({in.Str(p, "name"), in.Int(p, "start_ns", 0), in.Int(p, "stream")});
  return r;
}

}  // namespace

Result<std::vector<RankEnd>> ParseEndStates(std::string_view summary_json, const std::string& path) {
  const json j = json::parse(summary_json, nullptr, false);
  if (!j.is_object()) return ParseError(path + ": not a JSON object (is it truffld-merge's summary.json?)");
  EntryReader top(path);
  const std::string schema = top.Str(j, "schema");
  if (schema != "truffld.summary/1") return ParseError(path + ": schema is '" + schema + "', not truffld.summary/1");
  const json& files = top.Array(j, "files");
  TRUFFLD_RETURN_IF_ERROR(top.status());
  std::vector<RankEnd> out;
  for (size_t i = 0; i < files.size(); ++i) {
    const json& f = files[i];
    EntryReader in(path + ": files[" + std::to_string(i) + "]");
    auto e = f.is_object() ? f.find("end_state") : f.end();
    if (!f.is_object() || e == f.end() || !e->is_object())
      return ParseError(path + ": files[" + std::to_string(i) + "] (" + (f.is_object() ? in.Str(f, "path") : "") +
                        ") has no end_state: written by an older truffld-merge; merge the dumps again");
    out.push_back(ParseOne(f, *e, i, in));
    TRUFFLD_RETURN_IF_ERROR(in.status());
  }
  if (out.empty()) return ParseError(path + ": no input files listed");
  return out;
}

}  // namespace truffld::diagnose
