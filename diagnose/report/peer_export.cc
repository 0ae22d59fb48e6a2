// Peer mode's test export (--export-tests): one CSV line per tested cost (see output.h).
#include <cmath>
#include <cstdio>
#include <fstream>

#include "peer/decision.h"
#include "peer/format_ns.h"
#include "report/output.h"
#include "stage2/peer_evidence.h"
#include "peer/stage.h"
#include "truffld/terminal_text.h"

namespace truffld::diagnose {

Status WriteTests(const std::string& path, const InstanceTable& t, const PeerStageResult& r) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError(path + ": cannot open for writing");
  out << "rank,step_index,view,family,level,metric,observed_ns";
  for (int s = 0; s < kPeerSourceCount; ++s) {
    const std::string n = PeerSourceName(static_cast<PeerSource>(s));
    out << ",expected_" << n << ",peers_" << n << ",p_" << n;
  }
  out << ",p_value,unit_verdict,unit_p\n";
  char num[64];
  for (const TestRow& row : r.rows) {
    const StepInfo& st = t.steps[row.unit];
    out << (st.rank ? std::to_string(*st.rank) : "") << ',' << st.step_index << ',' << ViewName(st.view) << ','
        << CsvField(t.strings.Get(row.family)) << ',' << (row.instance == kFamilyRow ? "family" : "instance")
        << ',' << MetricName(row.metric) << ',' << row.observed;
    for (int s = 0; s < kPeerSourceCount; ++s) {
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

namespace {

// Why a straggler's own step shows no blame: its warm-up (first use of GPU code), a
// significant excess below the impact floor, or nothing its operators' peers explain.
std::string NoBlameCause(const InstanceTable& t, const PeerStageResult& r, uint32_t u) {
  if (u < r.warmup.size() && !r.warmup[u].empty()) {
    const WarmupCost& w = r.warmup[u][0];
    return "warm-up: first use of GPU code in " + t.strings.Get(w.family) + " (+" + FormatNs(w.excess_ns) +
           " host time, reported, not judged)";
  }
  if (u < r.decision.units.size() && r.decision.units[u].immaterial) {
    return "no operator cost its step the impact floor (" + t.strings.Get(r.decision.units[u].immaterial_family) +
           " +" + FormatNs(r.decision.units[u].immaterial_excess_ns) + " in all)";
  }
  return "no operator on the rank cost more than its peers: the delay lies outside the judged operators "
         "(or the rank had no peers to compare with)";
}

}  // namespace

size_t StragglerVerticalUnit(const InstanceTable& t, const StragglerRow& s) {
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    const StepInfo& st = t.steps[u];
    if (st.view != View::kHorizontal && st.rank.value_or(-1) == s.rank && st.step_index == s.step_index) return u;
  }
  return SIZE_MAX;
}

std::string StragglerCause(const InstanceTable& t, const PeerStageResult& r, const StragglerRow& s) {
  // Outside the device windows the entries are host calls: a late host, never a late device.
  const std::string how = s.host_entries ? "its host called the collectives late (a step without device detail: "
                                           "entries are host calls); " : "";
  const size_t u = StragglerVerticalUnit(t, s);
  if (u == SIZE_MAX) return how + "no vertical view of the rank in that step";
  if (r.blame[u].empty()) return how + NoBlameCause(t, r, static_cast<uint32_t>(u));
  const BlamedFamily& b = r.blame[u][0];
  const std::string fam = t.strings.Get(b.family);
  const std::string kind = b.metric == Metric::kHost ? "host" : (fam.find("copy") != std::string::npos ? "copy" : "compute");
  return how + kind + " (" + fam + " +" + FormatNs(b.excess_ns) + ")";
}

std::string PersistentStragglerSentence(const PersistentStraggler& p) {
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", 100 * p.typical_share);
  return "rank " + std::to_string(p.rank) + " entered the collectives last in " + std::to_string(p.steps) + " of " +
         std::to_string(p.logical_steps) + " steps: the other ranks waited for it typically " +
         FormatNs(p.typical_caused_ns) + " (" + share + " of its step), " + FormatNs(p.caused_ns) +
         " in all; a straggler in every step is how this run behaves (a slower GPU, link or host on that rank), "
         "reported once, not per step";
}

std::string RunCalibrationNote(const std::string& view, double centre, double scale, bool blind,
                               double best_possible_p, double long_step_ratio) {
  if (!EmpiricalNull{centre, scale}.Active()) return {};
  const std::string unless = long_step_ratio > 0 ? " unless it took at least " + FormatNumber("%g", long_step_ratio) +
                                                       "x as long as its similar steps" : std::string();
  std::string out = "the " + view + " view is judged against this run's own steps (" + NullFiguresText(centre, scale) +
                    ": the whole run is more surprising than the models expect), so a step is abnormal only "
                    "when it stands out from the others" +
                    (long_step_ratio > 0 ? " or took at least " + FormatNumber("%g", long_step_ratio) +
                                               "x as long as its similar steps (judged on the assumed null)"
                                         : std::string());
  if (blind) {
    out += "; even the strongest evidence reaches only q = " + FormatNumber("%.2g", best_possible_p) +
           " there, so a lone slow step cannot be flagged" + unless + ": no abnormal step in this view means that none stood "
           "out from the run's own spread, not that every step was healthy";
  }
  return out;
}

std::string FormatPeerSummary(const PeerStageResult& r) {
  const DecisionResult& d = r.decision;
  auto floor = [&](int v) {
    return d.views[v].immaterial ? " (" + std::to_string(d.views[v].immaterial) + " more significant but below the impact floor)" : std::string();
  };
  char line[640];
  std::snprintf(line, sizeof line,
                "\nStage I (peer, false-alarm rate %g, impact floor %g%% of a step):\n"
                "  vertical:   %d units judged, %d abnormal%s, %d with insufficient evidence\n"
                "  horizontal: %d units judged, %d abnormal%s, %d with insufficient evidence; %zu straggler step(s)",
                d.alpha, 100 * d.min_impact_share, d.views[0].judged, d.views[0].flagged, floor(0).c_str(), d.views[0].insufficient,
                d.views[1].judged, d.views[1].flagged, floor(1).c_str(), d.views[1].insufficient, r.stragglers.stragglers.size());
  std::string out = line;
  for (int v = 0; v < 2; ++v) {
    const ViewDecision& vd = d.views[v];
    const std::string note = RunCalibrationNote(v == 0 ? "vertical" : "horizontal", vd.null_centre, vd.null_scale,
                                                vd.single_step_blind, vd.best_possible_p, d.long_step_ratio);
    if (!note.empty()) out += "\n  note: " + note;
  }
  for (const RunFinding& f : r.findings) out += "\n  run finding: " + EscapeForTerminal(f.sentence);
  for (const SlowRegime& g : r.slow_regimes) out += "\n  run finding: " + EscapeForTerminal(g.sentence);
  for (const PersistentStraggler& p : r.stragglers.persistent)
    out += "\n  persistent straggler: " + EscapeForTerminal(PersistentStragglerSentence(p));
  for (const PipelineImbalance& p : r.pipelines) out += "\n  pipeline: " + EscapeForTerminal(PipelineImbalanceSentence(p));
  const WarmupTally& w = r.warmup_tally;
  if (w.material[0] + w.material[1] > 0) {
    out += "\n  warm-up (first use of GPU code, not judged): " + std::to_string(w.material[0] + w.material[1]) +
           " unit(s) above the impact floor, +" + FormatNs(w.excess_ns[0] + w.excess_ns[1]) + " in all";
  }
  return out;
}

}  // namespace truffld::diagnose
