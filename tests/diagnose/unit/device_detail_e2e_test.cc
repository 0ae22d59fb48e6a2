// End to end on hand-built trees: steps captured outside a sampled device window (trees marked
// "device_detail": false, their kernels and copies absent by design) are never judged abnormal
// for the device cost they lack, while a real fault in a step with device detail is still
// found. Reader -> Stage I (peer, pooled) -> offline Stage II.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "../synthetic_trees.h"
#include "peer/stage.h"
#include "run/pipeline.h"
#include "read/tree_reader.h"

namespace truffld::diagnose {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Device activity sampled as a steps-window plan would: every prefill step (step % 4 == 0)
// and the decode step after it (1, 5, 9, ...) keep their device detail; the other 24 decode
// steps of 48 were captured outside every window. (With fewer decode steps in windows, the
// faulty one would rightly have too few similar steps to be judged.)
bool SampledOut(int64_t step) { return step % 4 != 0 && step % 4 != 1; }

// Removes every kernel, copy and memset under `node`, as a capture without device activity
// leaves the tree.
void StripDevice(json& node) {
  if (!node.contains("children")) return;
  json kept = json::array();
  for (json& c : node["children"]) {
    const std::string layer = c.value("layer", "");
    if (layer == "kernel" || layer == "memcpy" || layer == "memset") continue;
    StripDevice(c);
    kept.push_back(std::move(c));
  }
  node["children"] = std::move(kept);
}

// The synthetic trees with the sampled-out steps as truffld-merge writes them.
std::string SampledTrees(const std::string& trees) {
  std::istringstream in(trees);
  std::string line, out;
  while (std::getline(in, line)) {
    json t = json::parse(line);
    if (SampledOut(t["step_index"].get<int64_t>())) {
      StripDevice(t["root"]);
      t["device_detail"] = false;
    }
    out += t.dump() + "\n";
  }
  return out;
}

InstanceTable Load(const std::string& content) {
  const fs::path p = fs::temp_directory_path() / ("truffld_devdetail_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(p) << content;
  TreeReader reader;
  EXPECT_TRUE(reader.Read(p.string()).ok());
  EXPECT_EQ(reader.stats().bad_lines, 0u);
  fs::remove(p);
  return reader.Finish();
}

class DeviceDetailE2E : public ::testing::TestWithParam<ScoringMode> {};

TEST_P(DeviceDetailE2E, StepsWithoutDeviceDetailAreNotAnomalies) {
  testing::SynthSpec spec;
  spec.steps = 48;
  spec.requests = 1;
  spec.faults = {{0, 25, "aten::mm", 3.0, 1.0}};  // step 25 has device detail: found
  const InstanceTable t = Load(SampledTrees(testing::MakeSyntheticTrees(spec).trees));
  int sampled_out = 0;
  for (const StepInfo& s : t.steps) {
    EXPECT_EQ(s.device_detail, !SampledOut(s.step_index)) << s.step_index;
    sampled_out += !s.device_detail;
  }
  ASSERT_EQ(sampled_out, 48);  // 24 steps, two views each
  StageOneOptions o;
  o.mode = GetParam();
  StageTwoConfig c;
  c.mode = LlmMode::kOff;
  StageTwo stage2(c);
  auto r = RunPipeline(t, nullptr, o, PeerStageOptions{}, stage2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  bool found = false;
  for (const StepDiagnosis& d : r->diagnoses) {
    const int64_t step = d.evidence.step_index;
    if (SampledOut(step)) {
      EXPECT_FALSE(d.abnormal) << ScoringModeName(o.mode) << ": step " << step << " " << ViewName(d.evidence.view)
                               << " has no device detail, which is no anomaly";
    }
    if (step == 25 && d.evidence.view == View::kVertical) found = d.abnormal;
    if (std::getenv("TRUFFLD_DIAG_VERBOSE"))
      std::printf("%s %ld %s %s p=%g %s\n", ScoringModeName(o.mode), long(step), ViewName(d.evidence.view),
                  d.evidence.peer ? VerdictName(d.evidence.peer->verdict) : VerdictName(d.label),
                  d.evidence.peer ? d.evidence.peer->p_value : 1.0,
                  d.evidence.peer ? d.evidence.peer->summary.c_str() : "");
  }
  EXPECT_TRUE(found) << ScoringModeName(o.mode) << ": the real fault";
}

// The default detector and the paper's pooled mixture (within-step mode models each step
// alone, where a step's instances all have device detail or all lack it).
INSTANTIATE_TEST_SUITE_P(Modes, DeviceDetailE2E, ::testing::Values(ScoringMode::kPeer, ScoringMode::kPooled),
                         [](const auto& info) { return std::string(ScoringModeName(info.param)); });

}  // namespace
}  // namespace truffld::diagnose
