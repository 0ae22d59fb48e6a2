// stats.json's sections, generated from the rows of stats_table.h.
#include "report/stats_table.h"

#include <cmath>

#include "report/output.h"

namespace truffld::diagnose {
namespace {

nlohmann::json MixtureModelsJson(const StageOneResult& s1) {
  nlohmann::json models = nlohmann::json::array();
  for (const auto& m : s1.models) {
    models.push_back({{"view", m.view}, {"family", m.family}, {"method", m.method}, {"k", m.k},
                      {"covariance", m.covariance}, {"dims", m.dims}, {"fit_samples", m.fit_samples},
                      {"bic", m.bics}});
  }
  return models;
}

nlohmann::json ResidualModelsJson(const PeerStageResult& r) {
  nlohmann::json models = nlohmann::json::array();
  for (const auto& m : r.scoring.models) {
    models.push_back({{"view", m.view}, {"family", m.family}, {"metric", m.metric}, {"source", m.source},
                      {"level", m.level}, {"regime", m.regime}, {"fitted", m.fitted}, {"method", m.method}, {"samples", m.samples}, {"k", m.k},
                      {"central", m.central}, {"weights", m.weights}, {"means", m.means}, {"sigmas", m.sigmas}});
  }
  return models;
}

nlohmann::json StragglersJson(const InstanceTable& t, const PeerStageResult& r) {
  nlohmann::json st = nlohmann::json::array();
  for (const auto& s : r.stragglers.stragglers) {
    st.push_back({{"rank", s.rank}, {"step_index", s.step_index}, {"caused_ns", std::llround(s.caused_ns)},
                  {"last_in", s.last_in}, {"collectives", s.collectives}, {"step_ns", std::llround(s.step_ns)},
                  {"cause", StragglerCause(t, r, s)}});
  }
  return st;
}

nlohmann::json PersistentStragglersJson(const PeerStageResult& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const PersistentStraggler& p : r.stragglers.persistent) {
    out.push_back({{"rank", p.rank}, {"steps", p.steps}, {"logical_steps", p.logical_steps},
                   {"typical_caused_ns", std::llround(p.typical_caused_ns)}, {"typical_share", p.typical_share},
                   {"caused_ns", std::llround(p.caused_ns)}, {"evidence", PersistentStragglerSentence(p)}});
  }
  return out;
}

nlohmann::json PipelinesJson(const PeerStageResult& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const PipelineImbalance& p : r.pipelines) {
    nlohmann::json stages = nlohmann::json::array();
    for (const PipelineStage& s : p.stages)
      stages.push_back({{"ranks", s.ranks}, {"hosts", s.hosts}, {"load_ns", std::llround(s.load_ns)}});
    out.push_back({{"stages", stages}, {"longest", p.longest}, {"steps", p.steps}, {"steps_longest", p.steps_longest},
                   {"saving_ns", std::llround(p.saving_ns)}, {"step_ns", std::llround(p.step_ns)}, {"share", p.share},
                   {"evidence", PipelineImbalanceSentence(p)}});
  }
  return out;
}

nlohmann::json RunFindingsJson(const InstanceTable& t, const PeerStageResult& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const RunFinding& f : r.findings) {
    nlohmann::json fams = nlohmann::json::array();
    for (uint32_t fam : f.families) fams.push_back(t.strings.Get(fam));
    out.push_back({{"view", ViewName(f.view)}, {"rank", f.rank >= 0 ? nlohmann::json(f.rank) : nlohmann::json(nullptr)},
                   {"metric", MetricName(f.metric)}, {"units", f.units}, {"judged", f.judged}, {"demoted", f.demoted},
                   {"typical_excess_ns", std::llround(f.typical_excess_ns)},
                   {"min_excess_ns", std::llround(f.min_excess_ns)}, {"max_excess_ns", std::llround(f.max_excess_ns)},
                   {"min_share", f.min_share}, {"max_share", f.max_share}, {"impact_ns", std::llround(f.impact_ns)},
                   {"absorbed_ns", std::llround(f.absorbed_ns)}, {"families", fams}, {"evidence", f.sentence}});
  }
  return out;
}

nlohmann::json SlowRegimesJson(const InstanceTable& t, const PeerStageResult& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const SlowRegime& g : r.slow_regimes) {
    out.push_back({{"view", ViewName(g.view)}, {"rank", g.rank >= 0 ? nlohmann::json(g.rank) : nlohmann::json(nullptr)},
                   {"family", t.strings.Get(g.family)}, {"metric", MetricName(g.metric)}, {"units", g.units()},
                   {"judged", g.judged}, {"typical_excess_ns", std::llround(g.typical_excess_ns)},
                   {"min_excess_ns", std::llround(g.min_excess_ns)}, {"max_excess_ns", std::llround(g.max_excess_ns)},
                   {"typical_share", g.typical_share}, {"total_ns", std::llround(g.total_ns)},
                   {"absorbed_ns", std::llround(g.absorbed_ns)}, {"steps", g.steps},
                   {"evidence", g.sentence}});
  }
  return out;
}

nlohmann::json WarmupStatsJson(const WarmupTally& w, int i) {
  return {{"units", w.units[i]}, {"above_impact_floor", w.material[i]}, {"excess_ns", std::llround(w.excess_ns[i])}};
}

nlohmann::json NullStatsJson(const DecisionResult& d, int i) {
  return {{"centre", d.views[i].null_centre}, {"scale", d.views[i].null_scale}, {"best_possible_p", d.views[i].best_possible_p},
          {"lone_step_detectable", !d.views[i].single_step_blind}};
}

nlohmann::json BreakerStatsJson(const StageTwoStats& s) {
  return {{"tripped", s.breaker_tripped}, {"steps_decided_offline", s.breaker_steps}, {"reason", s.breaker_reason}};
}

nlohmann::json PeerViewStatsJson(const PeerStageResult& r, View v) {
  const int i = ViewIndex(v);
  nlohmann::json j;
#define TRUFFLD_STATS_WRITE(key, type, value, description) j[#key] = value;
  TRUFFLD_DIAGNOSE_PEER_VIEW_STATS(TRUFFLD_STATS_WRITE)
  return j;
}

}  // namespace

nlohmann::json InputStatsJson(const std::string& path, const ReadStats& rs) {
  nlohmann::json j;
  TRUFFLD_DIAGNOSE_INPUT_STATS(TRUFFLD_STATS_WRITE)
  return j;
}

nlohmann::json StageOneStatsJson(const std::string& mode, const StageOneResult& s1) {
  nlohmann::json j;
  TRUFFLD_DIAGNOSE_STAGE1_STATS(TRUFFLD_STATS_WRITE)
  return j;
}

nlohmann::json PeerStatsJson(const InstanceTable& t, const PeerStageResult& r) {
  nlohmann::json j;
  TRUFFLD_DIAGNOSE_PEER_STATS(TRUFFLD_STATS_WRITE)
  return j;
}

nlohmann::json StageTwoStatsJson(const StageTwoStats& s, const std::string& config) {
  nlohmann::json j;
  TRUFFLD_DIAGNOSE_STAGE2_STATS(TRUFFLD_STATS_WRITE)
  return j;
}

nlohmann::json TraceStatsJson(const std::string& input, const TraceOverlay& overlay, const AnnotateStats& ts,
                              const std::string* error) {
  nlohmann::json j;
  TRUFFLD_DIAGNOSE_TRACE_STATS(TRUFFLD_STATS_WRITE)
  if (error == nullptr) {
    j.erase("error");
  } else {
    // Not written: what AnnotateTrace counted is not a result.
    for (const char* k : {"flows", "markers_unlinked", "markers_replayed", "markers_outside", "steps_annotated", "events_copied"}) j.erase(k);
    j["error"] = *error;
  }
  return j;
}
#undef TRUFFLD_STATS_WRITE

std::vector<StatsRow> StatsSchemaRows() {
  std::vector<StatsRow> rows;
  const char* object = "";
#define TRUFFLD_STATS_ADD(key, type, value, description) rows.push_back({object, #key, type, description});
#define TRUFFLD_STATS_OBJECT(name, TABLE) \
  object = name;                          \
  TABLE(TRUFFLD_STATS_ADD)
  TRUFFLD_STATS_OBJECT("stats", TRUFFLD_DIAGNOSE_STATS_SECTIONS)
  TRUFFLD_STATS_OBJECT("stats_input", TRUFFLD_DIAGNOSE_INPUT_STATS)
  TRUFFLD_STATS_OBJECT("stats_stage1", TRUFFLD_DIAGNOSE_STAGE1_STATS)
  TRUFFLD_STATS_OBJECT("stats_peer", TRUFFLD_DIAGNOSE_PEER_STATS)
  TRUFFLD_STATS_OBJECT("stats_peer_view", TRUFFLD_DIAGNOSE_PEER_VIEW_STATS)
  TRUFFLD_STATS_OBJECT("stats_stage2", TRUFFLD_DIAGNOSE_STAGE2_STATS)
  TRUFFLD_STATS_OBJECT("stats_trace", TRUFFLD_DIAGNOSE_TRACE_STATS)
#undef TRUFFLD_STATS_OBJECT
#undef TRUFFLD_STATS_ADD
  return rows;
}

}  // namespace truffld::diagnose
