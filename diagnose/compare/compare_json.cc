// compare.json and the stdout table of a run comparison (compare.h).
#include <cmath>
#include <cstdio>

#include "compare/compare.h"

namespace truffld::diagnose {
namespace {

using nlohmann::json;

double Round4(double v) { return std::round(v * 1e4) / 1e4; }

}  // namespace

json CompareJson(const CompareResult& r, const std::string& target, const std::string& baseline, const CompareOptions& o) {
  json j;
  j["schema"] = "truffld.compare/1";
  j["target"] = target;
  j["baseline"] = baseline;
  j["min_change"] = o.min_change;
  j["sentence"] = r.sentence;
  json st = json::array();
  for (const StepTimeChange& s : r.step_time)
    st.push_back({{"view", ViewName(s.view)}, {"phase", s.phase}, {"steps", s.steps}, {"baseline_steps", s.baseline_steps},
                  {"ratio", Round4(s.ratio)}, {"ci_low", Round4(s.ci_low)}, {"ci_high", Round4(s.ci_high)},
                  {"delta_ns_per_step", std::llround(s.delta_ns_per_step)}, {"significant", s.significant},
                  {"insufficient_evidence", s.insufficient}});
  j["step_time"] = st;
  json fam = json::array();
  for (const FamilyChange& f : r.families)
    fam.push_back({{"view", ViewName(f.view)}, {"phase", f.phase}, {"family", f.family}, {"metric", f.metric},
                   {"steps", f.steps}, {"baseline_steps", f.baseline_steps}, {"outside_baseline_range", f.outside_range},
                   {"ratio", Round4(f.ratio)}, {"ci_low", Round4(f.ci_low)}, {"ci_high", Round4(f.ci_high)},
                   {"delta_ns_per_step", std::llround(f.delta_ns_per_step)},
                   {"share_of_step_change", Round4(f.share_of_step_change)}, {"significant", f.significant},
                   {"insufficient_evidence", f.insufficient}});
  j["families"] = fam;
  j["kernels_appeared"] = r.kernels_appeared;
  j["kernels_disappeared"] = r.kernels_disappeared;
  return j;
}

std::string FormatCompare(const CompareResult& r) {
  std::string s = "Step time at equal workload (target / baseline, 95% interval):\n";
  char b[512];
  for (const StepTimeChange& t : r.step_time) {
    std::snprintf(b, sizeof b, "  %-10s %-8s %6.3fx [%6.3f, %6.3f] %+10.0f ns/step  %zu vs %zu steps%s\n",
                  ViewName(t.view), t.phase.c_str(), t.ratio, t.ci_low, t.ci_high, t.delta_ns_per_step, t.steps,
                  t.baseline_steps, t.insufficient ? "  insufficient evidence" : t.significant ? "  significant" : "");
    s += b;
  }
  size_t sig = 0;
  for (const FamilyChange& f : r.families) {
    if (!f.significant) continue;
    if (!sig++) s += "Families that changed significantly:\n";
    std::snprintf(b, sizeof b, "  %-40.40s %-6s %-10s %-8s %6.3fx [%6.3f, %6.3f] %+10.0f ns/step\n", f.family.c_str(),
                  f.metric.c_str(), ViewName(f.view), f.phase.c_str(), f.ratio, f.ci_low, f.ci_high, f.delta_ns_per_step);
    s += b;
  }
  size_t thin = 0;
  for (const FamilyChange& f : r.families) thin += f.insufficient;
  if (!sig)
    s += "No family changed significantly (" + std::to_string(r.families.size() - thin) + " judged, " +
         std::to_string(thin) + " with fewer than " + std::to_string(kMinCompareSteps) + " steps of equal workload).\n";
  s += "Kernels: " + std::to_string(r.kernels_appeared.size()) + " appeared, " +
       std::to_string(r.kernels_disappeared.size()) + " disappeared.\n";
  return s + r.sentence + "\n";
}

}  // namespace truffld::diagnose
