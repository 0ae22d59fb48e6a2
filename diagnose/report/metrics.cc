// Step- and operator-level evaluation metrics, and the labels.jsonl reader.
#include "report/metrics.h"

#include <array>
#include <cstdio>
#include <set>

#include "truffld/json_get.h"
#include "truffld/line_reader.h"

namespace truffld::diagnose {

void ParseLabelLine(std::string_view line, const std::string& where, LabelSet* out) {
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;
  ++out->lines;
  auto bad = [&](const std::string& msg) {
    ++out->bad_lines;
    if (out->problems.size() < 20) out->problems.push_back(where + ": " + msg);
  };
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (!j.contains("step_index") || !j["step_index"].is_number_integer() || j["step_index"].get<long long>() < 0) {
    return bad("missing or invalid step_index");
  }
  // Typed reads (truffld/json_get.h): a member of the wrong type is a bad line, never a throw.
  Result<std::string> view = json::GetString(j, "view", "", "labels");
  View v = View::kVertical;
  if (!view.ok() || !ParseView(*view, &v)) return bad("view must be vertical or horizontal");
  StepKey key;
  key.rank = j.contains("rank") && j["rank"].is_number_integer() ? j["rank"].get<int64_t>() : -1;
  key.step_index = j["step_index"].get<int64_t>();
  key.horizontal = v == View::kHorizontal;
  StepLabel label;
  if (j.contains("faulty")) {
    if (!j["faulty"].is_array()) return bad("faulty must be an array of family names");
    for (const auto& f : j["faulty"]) {
      if (!f.is_string()) return bad("faulty must be an array of family names");
      label.faulty.push_back(f.get<std::string>());
    }
  }
  Result<bool> abnormal = json::GetBool(j, "abnormal", !label.faulty.empty(), "labels");
  if (!abnormal.ok() || (j.contains("abnormal") && j["abnormal"].is_null())) return bad("abnormal must be a boolean");
  label.abnormal = *abnormal;
  auto [it, fresh] = out->steps.emplace(key, label);
  if (!fresh) {  // the same step twice: merge, and say so
    it->second.abnormal = it->second.abnormal || label.abnormal;
    for (auto& f : label.faulty) it->second.faulty.push_back(f);
    if (out->problems.size() < 20) out->problems.push_back(where + ": duplicate step; merged with the earlier line");
  }
}

Result<LabelSet> ReadLabels(const std::string& path) {
  auto reader = LineReader::Open(path);
  if (!reader.ok()) return reader.status();
  LabelSet out;
  std::string_view line;
  while ((*reader)->Next(&line)) ParseLabelLine(line, (*reader)->Where(), &out);
  if (!(*reader)->status().ok()) return (*reader)->status();
  for (const auto& w : (*reader)->warnings()) {
    if (out.problems.size() < 20) out.problems.push_back(w.message);
  }
  return out;
}

StepMetrics ComputeStepMetrics(long tp, long fp, long tn, long fn) {
  StepMetrics m{tp, fp, tn, fn};
  long n = tp + fp + tn + fn;
  m.accuracy = n ? static_cast<double>(tp + tn) / static_cast<double>(n) : 0.0;
  m.precision = tp + fp ? static_cast<double>(tp) / static_cast<double>(tp + fp) : 0.0;
  m.recall = tp + fn ? static_cast<double>(tp) / static_cast<double>(tp + fn) : 0.0;
  m.f1 = 2 * tp + fp + fn ? 2.0 * static_cast<double>(tp) / static_cast<double>(2 * tp + fp + fn) : 0.0;
  return m;
}

FamilyMetrics ComputeFamilyMetrics(std::string family, long tp, long fp, long fn, double eps) {
  FamilyMetrics m;
  m.family = std::move(family);
  m.tp = tp; m.fp = fp; m.fn = fn;
  double dtp = static_cast<double>(tp);
  m.precision = dtp / (static_cast<double>(tp + fp) + eps);
  m.recall = dtp / (static_cast<double>(tp + fn) + eps);
  m.f1 = 2 * m.precision * m.recall / (m.precision + m.recall + eps);
  m.jaccard = dtp / (static_cast<double>(tp + fp + fn) + eps);
  m.positive = tp + fn > 0;
  return m;
}

std::vector<ViewEvaluation> Evaluate(const std::vector<Prediction>& predictions,
                                     const LabelSet& labels, double eps) {
  std::vector<ViewEvaluation> out;
  for (bool horizontal : {false, true}) {
    std::map<StepKey, const Prediction*> pred;
    for (const auto& p : predictions) if (p.key.horizontal == horizontal) pred[p.key] = &p;
    std::set<StepKey> keys;
    for (auto& [k, v] : pred) keys.insert(k);
    long missing = 0;
    for (auto& [k, v] : labels.steps) {
      if (k.horizontal != horizontal) continue;
      if (!pred.count(k)) ++missing;
      keys.insert(k);
    }
    if (keys.empty()) continue;
    ViewEvaluation ev;
    ev.view = horizontal ? "horizontal" : "vertical";
    ev.steps = static_cast<long>(keys.size());
    ev.labelled_steps_missing = missing;
    long tp = 0, fp = 0, tn = 0, fn = 0;
    std::map<std::string, std::array<long, 3>> fam;  // tp, fp, fn
    for (const StepKey& k : keys) {
      auto p = pred.find(k);
      auto l = labels.steps.find(k);
      bool yp = p != pred.end() && p->second->abnormal;
      bool yl = l != labels.steps.end() && l->second.abnormal;
      if (yp && yl) ++tp; else if (yp) ++fp; else if (yl) ++fn; else ++tn;
      std::set<std::string> ps, ls;
      if (p != pred.end()) ps.insert(p->second->faulty.begin(), p->second->faulty.end());
      if (l != labels.steps.end()) ls.insert(l->second.faulty.begin(), l->second.faulty.end());
      for (const auto& f : ps) fam[f][ls.count(f) ? 0 : 1]++;
      for (const auto& f : ls) if (!ps.count(f)) fam[f][2]++;
    }
    // Every family the output knows of belongs to T, even with no TP/FP/FN.
    for (const auto& p : predictions) {
      if (p.key.horizontal == horizontal) for (const auto& f : p.faulty) fam[f];
    }
    ev.step = ComputeStepMetrics(tp, fp, tn, fn);
    for (auto& [name, c] : fam) ev.families.push_back(ComputeFamilyMetrics(name, c[0], c[1], c[2], eps));
    for (const auto& f : ev.families) {
      for (MacroMetrics* m : {&ev.macro, &ev.macro_plus}) {
        if (m == &ev.macro_plus && !f.positive) continue;
        m->precision += f.precision; m->recall += f.recall; m->f1 += f.f1; m->jaccard += f.jaccard;
        ++m->families;
      }
    }
    for (MacroMetrics* m : {&ev.macro, &ev.macro_plus}) {
      if (m->families == 0) continue;
      double n = m->families;
      m->precision /= n; m->recall /= n; m->f1 /= n; m->jaccard /= n;
    }
    out.push_back(std::move(ev));
  }
  return out;
}

nlohmann::json EvaluationToJson(const std::vector<ViewEvaluation>& e) {
  nlohmann::json j = nlohmann::json::object();
  auto macro = [](const MacroMetrics& m) {
    return nlohmann::json{{"precision", m.precision}, {"recall", m.recall}, {"f1", m.f1},
                          {"jaccard", m.jaccard}, {"families", m.families}};
  };
  for (const auto& v : e) {
    nlohmann::json fams = nlohmann::json::array();
    for (const auto& f : v.families) {
      fams.push_back({{"family", f.family}, {"tp", f.tp}, {"fp", f.fp}, {"fn", f.fn},
                      {"precision", f.precision}, {"recall", f.recall}, {"f1", f.f1},
                      {"jaccard", f.jaccard}, {"positive", f.positive}});
    }
    j[v.view] = {{"steps", v.steps},
                 {"labelled_steps_missing_from_output", v.labelled_steps_missing},
                 {"step", {{"tp", v.step.tp}, {"fp", v.step.fp}, {"tn", v.step.tn}, {"fn", v.step.fn},
                           {"accuracy", v.step.accuracy}, {"precision", v.step.precision},
                           {"recall", v.step.recall}, {"f1", v.step.f1}}},
                 {"operator", {{"macro", macro(v.macro)}, {"macro_plus", macro(v.macro_plus)},
                               {"families", fams}}}};
  }
  return j;
}

std::string FormatEvaluation(const std::vector<ViewEvaluation>& e) {
  std::string s;
  char buf[512];
  for (const auto& v : e) {
    std::snprintf(buf, sizeof buf,
                  "%-10s steps=%ld  step: Acc %.3f  P %.3f  R %.3f  F1 %.3f  (TP %ld FP %ld TN %ld FN %ld)\n"
                  "%-10s operator Macro:  P %.3f  R %.3f  F1 %.3f  J %.3f  over %d families\n"
                  "%-10s operator Macro+: P %.3f  R %.3f  F1 %.3f  J %.3f  over %d families\n",
                  v.view.c_str(), v.steps, v.step.accuracy, v.step.precision, v.step.recall,
                  v.step.f1, v.step.tp, v.step.fp, v.step.tn, v.step.fn, "", v.macro.precision,
                  v.macro.recall, v.macro.f1, v.macro.jaccard, v.macro.families, "",
                  v.macro_plus.precision, v.macro_plus.recall, v.macro_plus.f1,
                  v.macro_plus.jaccard, v.macro_plus.families);
    s += buf;
    if (v.labelled_steps_missing > 0) {
      s += "           note: " + std::to_string(v.labelled_steps_missing) +
           " labelled steps are not in the diagnosed trees (counted as predicted normal)\n";
    }
  }
  return s;
}

}  // namespace truffld::diagnose
