// hang.json (schemas/hang.schema.json) from a HangReport.
#include "hang/hang.h"

namespace truffld::diagnose {
namespace {

using nlohmann::json;

json Ranks(const std::vector<size_t>& idx, const std::vector<RankEnd>& ends) {
  json a = json::array();
  for (size_t i : idx) a.push_back(RankLabel(ends[i]));
  return a;
}

json RankJson(const RankEnd& e, int64_t job_end, const std::string& role) {
  json j;
  j["rank"] = e.rank >= 0 ? json(e.rank) : json(nullptr);
  j["label"] = RankLabel(e);
  j["host"] = e.host;
  j["process_id"] = e.process_id;
  j["path"] = e.path;
  j["role"] = role;
  j["clean_exit"] = !e.Killed();
  j["last_event_ns"] = e.last_event_ns;
  j["silent_s"] = double(job_end - e.last_event_ns) / 1e9;
  j["steps_entered"] = e.steps_entered;
  j["last_step"] = e.last_step;
  j["open_stack"] = OpenStack(e);
  json open = json::array();
  for (const auto& f : e.open)
    open.push_back({{"name", f.name}, {"layer", f.layer}, {"start_ns", f.start_ns}, {"thread_id", f.thread_id},
                    {"open_s", double(job_end - f.start_ns) / 1e9}});
  j["open_ranges"] = open;
  json coll = json::array();
  for (const auto& c : e.collectives)
    coll.push_back({{"communicator", c.communicator}, {"entered", c.entered}, {"last_op", c.op},
                    {"world_size", c.world_size < 0 ? json(nullptr) : json(c.world_size)},
                    {"last_open", c.last_open}});
  j["collectives"] = coll;
  j["pending_launches"] = e.pending_launches;
  return j;
}

}  // namespace

json HangJson(const std::vector<RankEnd>& ends, const HangReport& r) {
  json j;
  j["schema"] = "truffld.hang/1";
  j["status"] = HangStatusName(r.status);
  j["sentence"] = r.sentence;
  j["job_end_ns"] = r.job_end_ns;
  j["culprits"] = Ranks(r.culprits, ends);
  j["waiting"] = Ranks(r.waiting, ends);
  json groups = json::array();
  for (const HangGroup& g : r.groups) {
    groups.push_back({{"basis", g.basis},
                      {"world_size", g.world_size < 0 ? json(nullptr) : json(g.world_size)},
                      {"members", Ranks(g.members, ends)},
                      {"collectives_entered", g.entered},
                      {"steps_entered", g.steps},
                      {"behind", Ranks(g.behind, ends)},
                      {"behind_by", g.by.empty() ? json(nullptr) : json(g.by)}});
  }
  j["groups"] = groups;
  json ranks = json::array();
  for (size_t i = 0; i < ends.size(); ++i) {
    const bool culprit = std::find(r.culprits.begin(), r.culprits.end(), i) != r.culprits.end();
    const bool waiting = std::find(r.waiting.begin(), r.waiting.end(), i) != r.waiting.end();
    ranks.push_back(RankJson(ends[i], r.job_end_ns, culprit ? "culprit" : waiting ? "waiting" : "other"));
  }
  j["ranks"] = ranks;
  return j;
}

}  // namespace truffld::diagnose
