// summary.json end states -> RankEnd (end_states.h).
#include "hang/end_states.h"

#include <nlohmann/json.hpp>

namespace truffld::diagnose {
namespace {

using nlohmann::json;

int64_t Int(const json& j, const char* key, int64_t dflt = -1) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : dflt;
}
uint64_t Count(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}
std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
bool Bool(const json& j, const char* key, bool dflt) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : dflt;
}
const json& Array(const json& j, const char* key) {
  static const json kEmpty = json::array();
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : kEmpty;
}

RankEnd ParseOne(const json& f, const json& e, size_t index) {
  RankEnd r;
  r.file = index;
  r.path = Str(f, "path");
  r.host = Str(f, "host");
  r.rank = Int(f, "rank");
  r.process_id = Int(f, "process_id");
  r.clean_exit = Bool(e, "clean_exit", true);
  r.stats_record = Bool(e, "stats_record", false);
  r.truncated_last_line = Bool(e, "truncated_last_line", false);
  r.last_event_ns = Int(e, "last_event_ns", 0);
  r.last_alive_ns = std::max(r.last_event_ns, Int(e, "last_alive_ns", 0));
  r.steps_entered = Count(e, "steps_entered");
  r.last_step = Str(e, "last_step");
  r.last_step_start_ns = Int(e, "last_step_start_ns", 0);
  r.last_step_open = Bool(e, "last_step_open", false);
  for (const json& o : Array(e, "open_ranges"))
    r.open.push_back({Str(o, "name"), Str(o, "layer"), Int(o, "start_ns", 0), Int(o, "thread_id")});
  for (const json& c : Array(e, "collectives"))
    r.collectives.push_back({Str(c, "communicator"), Str(c, "op"), Count(c, "entered"), Int(c, "bytes"),
                             Int(c, "world_size"), Int(c, "last_start_ns", 0), Int(c, "last_end_ns", 0),
                             Bool(c, "last_open", false)});
  r.pending_launches = Count(e, "pending_launches");
  for (const json& p : Array(e, "first_pending_launches"))
    r.first_pending.push_back({Str(p, "name"), Int(p, "start_ns", 0), Int(p, "stream")});
  return r;
}

}  // namespace

Result<std::vector<RankEnd>> ParseEndStates(std::string_view summary_json, const std::string& path) {
  const json j = json::parse(summary_json, nullptr, false);
  if (!j.is_object()) return ParseError(path + ": not a JSON object (is it truffld-merge's summary.json?)");
  if (Str(j, "schema") != "truffld.summary/1")
    return ParseError(path + ": schema is '" + Str(j, "schema") + "', not truffld.summary/1");
  const json& files = Array(j, "files");
  std::vector<RankEnd> out;
  for (size_t i = 0; i < files.size(); ++i) {
    const json& f = files[i];
    auto e = f.find("end_state");
    if (e == f.end() || !e->is_object())
      return ParseError(path + ": files[" + std::to_string(i) + "] (" + Str(f, "path") +
                        ") has no end_state: written by an older truffld-merge; merge the dumps again");
    out.push_back(ParseOne(f, *e, i));
  }
  if (out.empty()) return ParseError(path + ": no input files listed");
  return out;
}

}  // namespace truffld::diagnose
