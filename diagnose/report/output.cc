// diagnosis.jsonl, the stdout table and the feature export.
#include "report/output.h"

#include "report/root_causes.h"
#include "stage2/peer_evidence.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "truffld/terminal_text.h"

namespace truffld::diagnose {
namespace {

void AddPeerCost(nlohmann::json& fj, const PeerCost& c) {
  fj["metric"] = MetricName(c.metric);
  fj["basis"] = PeerSourceName(c.basis);
  fj["observed_ns"] = std::llround(c.observed_ns);
  fj["expected_ns"] = std::llround(c.expected_ns);
  fj["excess_ns"] = std::llround(c.excess_ns);
  fj["share"] = c.share;
  if (!std::isnan(c.impact_ns)) {
    fj["impact_ns"] = std::llround(c.impact_ns);
    fj["absorbed_ns"] = std::llround(c.absorbed_ns);
  }
  nlohmann::json ratios = nlohmann::json::object();
  for (const auto& [src, r] : c.ratios) ratios[PeerSourceName(src)] = r;
  fj["ratios"] = ratios;
  fj["evidence"] = c.sentence;
  if (!c.effect_of.empty()) fj["effect_of"] = c.effect_of;
}

// us since the trace's origin, to the ns, as the trace's own "ts" reads.
double TraceMicros(int64_t ns, int64_t origin) { return static_cast<double>(ns - origin) / 1000.0; }

void AddPeerVerdict(nlohmann::json& j, const StepEvidence& step) {
  const PeerUnitEvidence& e = *step.peer;
  j["start_ns"] = step.start_ns;
  j["end_ns"] = step.end_ns;
  j["evidence"] = e.summary;
  j["calibration"] = {{"p_value", e.p_value}, {"threshold", e.threshold},
                      {"false_alarm_rate", e.alpha}, {"tests", e.tests},
                      {"null", {{"centre", e.null_centre}, {"scale", e.null_scale},
                                {"lone_step_detectable", !e.null_blind}}},
                      {"long_step", e.long_step}};
  if (e.step_ratio > 0) j["calibration"]["step_ratio"] = e.step_ratio;
  j["peers"] = {{"tp_ranks", e.tp_peers}, {"tests_with_similar_steps", e.with_similar_steps},
                {"tests_with_layers", e.with_layers}};
  if (!e.warmup.empty()) {
    nlohmann::json warm = nlohmann::json::array();
    for (const WarmupEvidence& w : e.warmup) {
      warm.push_back({{"family", w.family}, {"instances", w.instances}, {"observed_ns", std::llround(w.observed_ns)},
                      {"expected_ns", std::llround(w.expected_ns)}, {"excess_ns", std::llround(w.excess_ns)},
                      {"share", w.share}});
    }
    j["warmup"] = warm;
  }
  if (!std::isnan(e.impact_ns)) {
    j["impact_ns"] = std::llround(e.impact_ns);
    j["absorbed_ns"] = std::llround(e.absorbed_ns);
  }
  if (e.waited_ns > 0) {
    j["waited_ns"] = std::llround(e.waited_ns);
    if (e.waiting_on >= 0) j["waiting_on_rank"] = e.waiting_on;
  }
}

}  // namespace

nlohmann::json DiagnosisToJson(const StepDiagnosis& d, const std::string& mode,
                               std::optional<int64_t> trace_origin_ns) {
  const StepEvidence& e = d.evidence;
  nlohmann::json j;
  j["schema"] = "truffld.diagnosis/1";
  j["rank"] = e.rank ? nlohmann::json(*e.rank) : nlohmann::json(nullptr);
  j["step_index"] = e.step_index;
  if (trace_origin_ns && e.end_ns > e.start_ns) {
    j["trace_start_us"] = TraceMicros(e.start_ns, *trace_origin_ns);
    j["trace_end_us"] = TraceMicros(e.end_ns, *trace_origin_ns);
  }
  j["step"] = e.step_name;
  j["view"] = ViewName(e.view);
  j["phase"] = e.phase;
  j["requests"] = e.requests;
  j["duration_ns"] = e.step_duration_ns;
  j["operator_instances"] = e.operator_instances;
  j["label"] = VerdictName(d.label);
  nlohmann::json faulty = nlohmann::json::array();
  for (const auto& f : d.faulty) {
    nlohmann::json fj = {{"family", f.family}, {"layer", f.layer}, {"score", f.score},
                         {"probability", f.probability}, {"method", f.method},
                         {"instances", f.instances}, {"parent_chain", f.parent_chain}};
    if (e.peer) AddPeerCost(fj, CostOrNone(f.cost));
    faulty.push_back(std::move(fj));
  }
  j["faulty"] = faulty;
  if (e.peer) AddPeerVerdict(j, e);
  nlohmann::json cands = nlohmann::json::array();
  for (const auto& f : e.families) {
    if (!f.candidate) continue;
    cands.push_back({{"family", f.family}, {"layer", f.layer}, {"score", f.score},
                     {"probability", f.probability}, {"min_instance_probability", f.min_instance_probability},
                     {"method", f.method}, {"instances", f.instances}, {"parent", f.parent}});
  }
  j["stage1"] = {{"mode", mode}, {"threshold", d.threshold}, {"families", e.families.size()},
                 {"candidates", cands}};
  nlohmann::json s2 = {{"abnormal", d.decision.abnormal}, {"faulty", d.decision.faulty},
                       {"source", DecisionSourceName(d.decision.source)},
                       {"rationale", d.decision.rationale}};
  if (!d.decision.note.empty()) s2["note"] = d.decision.note;
  if (!d.decision.raw.empty()) s2["raw"] = d.decision.raw;
  j["stage2"] = s2;
  if (e.comm_bytes > 0 || e.world_size > 0) {
    j["comm"] = {{"bytes", e.comm_bytes}, {"world_size", e.world_size}};
  }
  return j;
}

Status WriteDiagnosisJsonl(const std::string& path, const std::vector<StepDiagnosis>& d,
                           const std::string& mode, std::optional<int64_t> trace_origin_ns) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError(path + ": cannot open for writing");
  for (const auto& s : d) out << DiagnosisToJson(s, mode, trace_origin_ns).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out.flush();
  if (!out) return IoError(path + ": write failed");
  return Status::Ok();
}

// Column widths of the stdout table (code points); names are escaped for the terminal and cut
// with an ellipsis (truffld/terminal_text.h), so every table line holds one entry.
constexpr size_t kRankWidth = 6, kStepWidth = 6, kViewWidth = 10, kPhaseWidth = 8, kFamilyWidth = 40;
constexpr size_t kChainWidth = 60;

UnitTally TallyUnits(const std::vector<StepDiagnosis>& d) {
  UnitTally t;
  for (const StepDiagnosis& x : d) {
    t.abnormal += x.label == Verdict::kAbnormal;
    t.judged += x.label != Verdict::kInsufficient;
    t.insufficient += x.label == Verdict::kInsufficient;
    if (x.label == Verdict::kInsufficient && !t.first_unjudged) t.first_unjudged = &x;
  }
  return t;
}

std::string UnjudgedReason(const UnitTally& t) {
  if (!t.first_unjudged || !t.first_unjudged->evidence.peer) return {};
  return t.first_unjudged->evidence.peer->summary;
}

std::string NoUnitJudgedSentence(const UnitTally& t, const std::string& what, const std::string& where,
                                 const std::string& reason) {
  if (t.judged > 0 || !t.first_unjudged) return {};
  return "No unit could be judged: all " + std::to_string(t.insufficient) + what + " had insufficient evidence (" +
         where + ")" + (reason.empty() ? std::string() : ", e.g. " + reason) + ".";
}

std::string FormatAbnormalTable(const std::vector<StepDiagnosis>& d, size_t max_rows) {
  auto row = [](const std::string& rank, const std::string& step, const std::string& view,
                const std::string& phase, const std::string& family, const std::string& score,
                const std::string& prob, const std::string& chain) {
    return TableCell(rank, kRankWidth) + " " + TableCell(step, kStepWidth) + " " + TableCell(view, kViewWidth) +
           " " + TableCell(phase, kPhaseWidth) + " " + TableCell(family, kFamilyWidth) + " " + TableCell(score, 9) +
           " " + TableCell(prob, 12) + " " + TruncateForDisplay(EscapeForTerminal(chain), kChainWidth) + "\n";
  };
  // Peer mode: units by what they cost their step (UnitCostNs), across all ranks; legacy modes: in order.
  bool by_cost = false;  // peer detector: rank by time cost, show excess
  std::vector<const StepDiagnosis*> ab;
  for (const auto& x : d) {
    by_cost = by_cost || x.evidence.peer.has_value();
    if (x.abnormal) ab.push_back(&x);
  }
  const UnitTally tally = TallyUnits(d);
  const size_t insufficient = tally.insufficient;
  // Not an all-clear when nothing was judged (a trace of one or two steps).
  if (const std::string none = NoUnitJudgedSentence(tally, " (rank, step, view) units", "see diagnosis.jsonl",
                                                    EscapeForTerminal(UnjudgedReason(tally)));
      !none.empty())
    return none + "\n";
  if (by_cost) {
    std::stable_sort(ab.begin(), ab.end(),
                     [](const StepDiagnosis* a, const StepDiagnosis* b) { return UnitCostNs(*a) > UnitCostNs(*b); });
  }
  std::string rows;
  const size_t shown = std::min(ab.size(), max_rows);
  char num[2][32];
  for (size_t k = 0; k < shown; ++k) {
    const StepDiagnosis& x = *ab[k];
    const std::string rank = x.evidence.rank ? std::to_string(*x.evidence.rank) : "-";
    const std::string step = std::to_string(x.evidence.step_index);
    const std::string view = ViewName(x.evidence.view);
    if (x.faulty.empty()) rows += row(rank, step, view, x.evidence.phase, "-", "", "", "");
    for (size_t i = 0; i < x.faulty.size(); ++i) {
      const auto& f = x.faulty[i];
      std::string chain;
      for (const auto& p : f.parent_chain) chain += (chain.empty() ? "" : " < ") + p;
      if (by_cost) {
        const PeerCost& c = CostOrNone(f.cost);
        const double ratio = c.expected_ns > 0 ? c.observed_ns / c.expected_ns : 0.0;
        std::snprintf(num[0], sizeof num[0], "+%s", FormatNs(c.excess_ns).c_str());
        std::snprintf(num[1], sizeof num[1], ratio < 10 ? "%.2fx %s" : "%.1fx %s", ratio,
                      f.cost && c.metric == Metric::kHost ? "host" : "dev");
      } else {
        std::snprintf(num[0], sizeof num[0], "%.3f", f.score);
        std::snprintf(num[1], sizeof num[1], "%.2e", f.probability);
      }
      rows += i == 0 ? row(rank, step, view, x.evidence.phase, f.family, num[0], num[1], chain)
                     : row("", "", "", "", f.family, num[0], num[1], chain);
    }
  }
  const std::string units = std::to_string(d.size()) + " (rank, step, view) units";
  const std::string unjudged = insufficient == 0 ? "" : "; " + std::to_string(insufficient) +
                                                            " had insufficient evidence to judge (see diagnosis.jsonl)";
  if (ab.empty()) return "No abnormal unit among " + units + unjudged + ".\n";
  std::string s = by_cost ? row("rank", "step", "view", "phase", "faulty operator", "excess", "vs expect", "parent chain")
                             : row("rank", "step", "view", "phase", "faulty operator", "score", "p(normal)", "parent chain");
  s += rows;
  s += std::to_string(ab.size()) + " of " + units + " abnormal" + unjudged +
       (ab.size() > shown ? " (the table shows the " + std::to_string(shown) +
                                (by_cost ? " that cost their steps most" : " first") + "; see diagnosis.jsonl)"
                          : "") + "\n";
  return s;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

bool IsCsvPath(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
}

Status WriteFeatures(const std::string& path, const InstanceTable& t, const std::vector<double>& rho,
                     const LabelSet* labels) {
  return WriteFeatures(path, IsCsvPath(path), t, rho, labels);
}

Status WriteFeatures(const std::string& path, bool csv, const InstanceTable& t, const std::vector<double>& rho,
                     const LabelSet* labels) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError(path + ": cannot open for writing");
  if (csv) {
    out << "rank,step_index,view,family,layer,parent,start_ns,end_ns";
    for (int f = 0; f < kNumFeatures; ++f) out << ',' << FeatureName(f);
    out << ",rho";
    if (labels) out << ",step_abnormal,family_faulty";
    out << '\n';
  }
  char num[64];
  for (uint32_t i = 0; i < t.size(); ++i) {
    const StepInfo& st = t.steps[t.step[i]];
    const std::string& fam = t.strings.Get(t.family[i]);
    const std::string& parent = t.parent[i] == kNoString ? std::string() : t.strings.Get(t.parent[i]);
    bool abnormal = false, faulty = false;
    if (labels) {
      auto it = labels->steps.find(KeyOf(st));
      if (it != labels->steps.end()) {
        abnormal = it->second.abnormal;
        for (const auto& f : it->second.faulty) faulty = faulty || f == fam;
      }
    }
    double r = i < rho.size() ? rho[i] : 1.0;
    if (csv) {
      out << (st.rank ? std::to_string(*st.rank) : "") << ',' << st.step_index << ',' << ViewName(st.view) << ','
          << CsvField(fam) << ',' << t.strings.Get(t.layer[i]) << ',' << CsvField(parent) << ','
          << t.start_ns[i] << ',' << t.end_ns[i];
      for (int f = 0; f < kNumFeatures; ++f) {
        std::snprintf(num, sizeof num, ",%.17g", t.features[i][f]);
        out << num;
      }
      std::snprintf(num, sizeof num, ",%.17g", r);
      out << num;
      if (labels) out << ',' << (abnormal ? 1 : 0) << ',' << (faulty ? 1 : 0);
      out << '\n';
    } else {
      nlohmann::json j = {{"rank", st.rank ? nlohmann::json(*st.rank) : nlohmann::json(nullptr)},
                          {"step_index", st.step_index}, {"view", ViewName(st.view)}, {"family", fam},
                          {"layer", t.strings.Get(t.layer[i])}, {"parent", parent},
                          {"start_ns", t.start_ns[i]}, {"end_ns", t.end_ns[i]}, {"rho", r}};
      for (int f = 0; f < kNumFeatures; ++f) j[FeatureName(f)] = t.features[i][f];
      if (labels) { j["step_abnormal"] = abnormal; j["family_faulty"] = faulty; }
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    }
  }
  out.flush();
  if (!out) return IoError(path + ": write failed");
  return Status::Ok();
}

}  // namespace truffld::diagnose
