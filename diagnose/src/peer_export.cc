// Peer mode's test export (--export-tests): one CSV line per tested cost (see output.h).
#include <cmath>
#include <cstdio>
#include <fstream>

#include "truffld/diagnose/output.h"
#include "truffld/diagnose/peer_evidence.h"
#include "truffld/diagnose/peer_stage.h"

namespace truffld::diagnose {

Status WriteTests(const std::string& path, const InstanceTable& t, const PeerStageResult& r) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError(path + ": cannot open for writing");
  out << "rank,step_index,view,family,level,metric,observed_ns";
  for (int s = 0; s < kNumSources; ++s) {
    const std::string n = SourceName(static_cast<Source>(s));
    out << ",expected_" << n << ",peers_" << n << ",p_" << n;
  }
  out << ",p_value,unit_verdict,unit_p\n";
  char num[64];
  for (const TestRow& row : r.rows) {
    const StepInfo& st = t.steps[row.unit];
    out << (st.rank ? std::to_string(*st.rank) : "") << ',' << st.step_index << ',' << st.view << ','
        << CsvField(t.strings.Get(row.family)) << ',' << (row.instance == kFamilyRow ? "family" : "instance")
        << ',' << MetricName(row.metric) << ',' << row.observed;
    for (int s = 0; s < kNumSources; ++s) {
      const size_t k = static_cast<size_t>(s);
      if (std::isnan(row.expected[k])) {
        out << ",,,";
        continue;
      }
      std::snprintf(num, sizeof num, ",%.9g,%d,%.6g", row.expected[k], row.peers[k], row.p[k]);
      out << num;
    }
    const UnitVerdict& v = r.decision.units[row.unit];
    std::snprintf(num, sizeof num, ",%.6g,%s,%.6g\n", row.p_value, VerdictName(v.verdict), v.p_value);
    out << num;
  }
  out.flush();
  if (!out) return IoError(path + ": write failed");
  return Status::Ok();
}

nlohmann::json PeerStatsJson(const InstanceTable& t, const PeerStageResult& r) {
  const DecisionResult& d = r.decision;
  nlohmann::json j;
  const WarmupTally& warm = r.warmup_tally;
  j["false_alarm_rate"] = d.alpha;
  j["min_impact_share"] = d.min_impact_share;
  for (int v = 0; v < 2; ++v) {
    j[v ? "horizontal" : "vertical"] = {{"threshold", d.threshold[v]}, {"judged", d.judged[v]},
                                        {"abnormal", d.flagged[v]}, {"insufficient_evidence", d.insufficient[v]},
                                        {"below_impact_floor", d.immaterial[v]},
                                        {"warmup", {{"units", warm.units[v]}, {"above_impact_floor", warm.material[v]},
                                                    {"excess_ns", std::llround(warm.excess_ns[v])}}},
                                        {"null", {{"centre", d.null_centre[v]}, {"scale", d.null_scale[v]},
                                                  {"best_possible_p", d.best_possible_p[v]},
                                                  {"lone_step_detectable", !d.single_step_blind[v]}}},
                                        {"calibrated_threshold", d.calibrated_threshold[v]}};
  }
  j["tests"] = r.rows.size();
  j["timer_resolution_ns"] = r.timer_resolution_ns;
  j["residual_fits"] = r.scoring.fits;
  j["residual_fallbacks"] = r.scoring.fallbacks;
  nlohmann::json models = nlohmann::json::array();
  for (const auto& m : r.scoring.models) {
    models.push_back({{"view", m.view}, {"family", m.family}, {"metric", m.metric}, {"source", m.source},
                      {"level", m.level}, {"regime", m.regime}, {"fitted", m.fitted}, {"method", m.method}, {"samples", m.samples}, {"k", m.k},
                      {"central", m.central}, {"weights", m.weights}, {"means", m.means}, {"sigmas", m.sigmas}});
  }
  j["residual_models"] = models;
  nlohmann::json st = nlohmann::json::array();
  for (const auto& s : r.stragglers.stragglers) {
    st.push_back({{"rank", s.rank}, {"step_index", s.step_index}, {"caused_ns", std::llround(s.caused_ns)},
                  {"last_in", s.last_in}, {"collectives", s.collectives}, {"step_ns", std::llround(s.step_ns)},
                  {"cause", StragglerCause(t, r, s)}});
  }
  j["stragglers"] = st;
  return j;
}

std::string StragglerCause(const InstanceTable& t, const PeerStageResult& r, const StragglerRow& s) {
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    const StepInfo& st = t.steps[u];
    if (st.view == "horizontal" || st.rank.value_or(-1) != s.rank || st.step_index != s.step_index) continue;
    if (r.blame[u].empty()) return "no abnormal operator on the rank";
    const BlamedFamily& b = r.blame[u][0];
    const std::string fam = t.strings.Get(b.family);
    const std::string kind = b.metric == Metric::kHost ? "host" : (fam.find("copy") != std::string::npos ? "copy" : "compute");
    return kind + " (" + fam + " +" + FormatNs(b.excess_ns) + ")";
  }
  return "no vertical view of the rank in that step";
}

std::string FormatPeerSummary(const PeerStageResult& r) {
  const DecisionResult& d = r.decision;
  auto floor = [&](int v) {
    return d.immaterial[v] ? " (" + std::to_string(d.immaterial[v]) + " more significant but below the impact floor)" : std::string();
  };
  char line[640];
  std::snprintf(line, sizeof line,
                "\nStage I (peer, false-alarm rate %g, impact floor %g%% of a step):\n"
                "  vertical:   %d units judged, %d abnormal%s, %d with insufficient evidence\n"
                "  horizontal: %d units judged, %d abnormal%s, %d with insufficient evidence; %zu straggler step(s)",
                d.alpha, 100 * d.min_impact_share, d.judged[0], d.flagged[0], floor(0).c_str(), d.insufficient[0],
                d.judged[1], d.flagged[1], floor(1).c_str(), d.insufficient[1], r.stragglers.stragglers.size());
  std::string out = line;
  const WarmupTally& w = r.warmup_tally;
  if (w.material[0] + w.material[1] > 0) {
    out += "\n  warm-up (first use of GPU code, not judged): " + std::to_string(w.material[0] + w.material[1]) +
           " unit(s) above the impact floor, +" + FormatNs(w.excess_ns[0] + w.excess_ns[1]) + " in all";
  }
  return out;
}

}  // namespace truffld::diagnose
