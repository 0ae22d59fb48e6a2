// Unit tests of truffld-synth's pipeline stages, communication fault scopes and step phase tags:
// the layer split, the per-stage programs, config validation, and whole in-memory runs (pp = 1
// unchanged by the option, determinism with stages, scopes recorded in the ledger, labels).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>

#include "truffld/synth/config.h"
#include "truffld/synth/model.h"
#include "truffld/synth/simulator.h"
#include "truffld/synth/workload.h"

namespace truffld::synth {
namespace {

// Runs the simulator into memory; returns file name -> bytes and (optionally) the simulator.
std::map<std::string, std::string> RunSim(SynthConfig cfg, std::unique_ptr<Simulator>* keep = nullptr) {
  auto files = std::make_shared<std::map<std::string, std::string>>();
  SinkFactory f = [files](const std::string& name) -> Result<std::unique_ptr<ByteSink>> {
    struct Sink final : ByteSink {
      std::string* out;
      explicit Sink(std::string* o) : out(o) {}
      Status Write(std::string_view b) override {
        out->append(b);
        return Status::Ok();
      }
      Status Close() override { return Status::Ok(); }
    };
    return std::unique_ptr<ByteSink>(new Sink(&(*files)[name]));
  };
  cfg.out_dir = "mem";
  auto sim = std::make_unique<Simulator>(cfg, f);
  EXPECT_TRUE(sim->Run().ok());
  if (keep) *keep = std::move(sim);
  return *files;
}

SynthConfig Small(uint64_t seed, int ranks, int hosts, int pp) {
  SynthConfig c;
  EXPECT_TRUE(ApplyPreset("small", &c).ok());
  c.seed = seed;
  c.ranks = ranks;
  c.hosts = hosts;
  c.pp = pp;
  return c;
}

int Count(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

TEST(Pipeline, LayerSplitFollowsVllm) {
  // vLLM get_pp_indices: 36 layers on 5 stages -> 7,7,7,8,7 (remainder before the last stage).
  int begin = 0;
  const int want[5] = {7, 7, 7, 8, 7};
  for (int s = 0; s < 5; ++s) {
    PipelineStage st = StageOf(36, s, 5);
    EXPECT_EQ(st.layer_begin, begin);
    EXPECT_EQ(st.layer_end - st.layer_begin, want[s]) << s;
    begin = st.layer_end;
  }
  EXPECT_EQ(begin, 36);
  PipelineStage one = StageOf(4, 0, 1);
  EXPECT_TRUE(one.first() && one.last());
}

TEST(Pipeline, StagesReceiveComputeAndSend) {
  Catalogue cat;
  ModelDims d;
  d.layers = 4;
  d.tp = 2;
  StepShape shape;
  shape.tokens = 16;
  std::vector<Op> whole, first, last;
  BuildStepProgram(cat, d, shape, &whole);
  BuildStepProgram(cat, d, shape, &first, StageOf(4, 0, 2));
  BuildStepProgram(cat, d, shape, &last, StageOf(4, 1, 2));
  auto p2p = [](const std::vector<Op>& ops, int dir) {
    int n = 0;
    for (const Op& op : ops) n += op.p2p == dir ? 1 : 0;
    return n;
  };
  EXPECT_EQ(p2p(whole, 1) + p2p(whole, -1), 0);
  EXPECT_EQ(p2p(first, 1), 2);
  EXPECT_EQ(p2p(first, -1), 0);
  EXPECT_EQ(p2p(last, -1), 2);
  EXPECT_EQ(p2p(last, 1), 0);
  EXPECT_EQ(last.front().p2p, -1);  // the receive comes first, before input preparation
  EXPECT_EQ(first.back().p2p, 1);   // the send comes last
  EXPECT_EQ(cat.Raw(first.back().comm), "nccl:send");
  EXPECT_EQ(first.back().work[0].bytes, 16 * d.hidden * 2);
  // Both stages together run the whole model's device work plus the transfers.
  EXPECT_EQ(first.size() + last.size() - 4, whole.size() + 3);  // + the second stage's input preparation
}

TEST(Pipeline, ValidateNeedsStagesToDivideHosts) {
  SynthConfig c = Small(1, 4, 2, 2);
  c.out_dir = "x";
  EXPECT_TRUE(c.Validate().ok());
  c.pp = 3;
  EXPECT_FALSE(c.Validate().ok());
  c = Small(1, 4, 4, 4);
  c.out_dir = "x";
  c.layers = 3;
  EXPECT_FALSE(c.Validate().ok());
  EXPECT_TRUE(ParseCommScopes("rank,link").ok());
  EXPECT_FALSE(ParseCommScopes("ring").ok());
}

TEST(Pipeline, PpOneIsTheDefaultAndStagesAreDeterministic) {
  SynthConfig a = Small(4, 4, 2, 1);
  SynthConfig b = a;
  b.pp = 1;
  EXPECT_EQ(RunSim(a), RunSim(b));
  auto p1 = RunSim(Small(4, 4, 2, 2));
  auto p2 = RunSim(Small(4, 4, 2, 2));
  EXPECT_EQ(p1, p2);
  EXPECT_NE(p1, RunSim(a));
}

TEST(Pipeline, SendRecvRangesSitOnTheRightStages) {
  auto files = RunSim(Small(9, 4, 2, 2));
  int dumps = 0;
  for (const auto& [name, data] : files) {
    if (name.rfind("truffld-", 0) != 0) continue;
    ++dumps;
    const bool stage0 = name.rfind("truffld-node0-", 0) == 0;
    const int steps = Count(data, "\"name\":\"step_execute_model[");
    EXPECT_EQ(steps, 24) << name;
    EXPECT_EQ(Count(data, "\"name\":\"nccl:send, bytes="), stage0 ? 2 * steps : 0) << name;
    EXPECT_EQ(Count(data, "\"name\":\"nccl:recv, bytes="), stage0 ? 0 : 2 * steps) << name;
    EXPECT_EQ(Count(data, "ncclDevKernel_SendRecv"), 2 * steps) << name;
    EXPECT_NE(data.find("world_size=2, impl=pynccl"), std::string::npos) << name;
    EXPECT_NE(data.find("--pipeline-parallel-size"), std::string::npos) << name;
  }
  EXPECT_EQ(dumps, 4);
}

TEST(Phase, EveryStepNameCarriesItsPhase) {
  EXPECT_EQ(StepRangeName({"a_b"}, StepTags{"decode"}), "step_execute_model[request_ids:a\\_b][phase:decode]");
  auto files = RunSim(Small(3, 2, 1, 1));
  const std::string& d = files.lower_bound("truffld-")->second;  // rank 0's dump
  const int steps = Count(d, "\"name\":\"step_execute_model[");
  EXPECT_EQ(steps, 24);
  EXPECT_EQ(Count(d, "][phase:prefill][tokens:"), Count(files["labels.jsonl"], "\"phase\":\"prefill\"") / 4);
  EXPECT_EQ(Count(d, "][phase:prefill][tokens:") + Count(d, "][phase:decode][tokens:"), steps);
  EXPECT_EQ(Count(d, "][ctx:"), steps);  // every step also names its token count and context
  EXPECT_EQ(StepRangeName({"a"}, StepTags{"mixed", 40, 900}), "step_execute_model[request_ids:a][phase:mixed][tokens:40][ctx:900]");
  SynthConfig untagged = Small(3, 2, 1, 1);
  untagged.phase_tags = untagged.workload_tags = false;
  auto plain = RunSim(untagged);
  const std::string& p = plain.lower_bound("truffld-")->second;
  EXPECT_EQ(Count(p, "[phase:") + Count(p, "[tokens:") + Count(p, "[ctx:"), 0);
}

TEST(ChunkedPrefill, MixedStepsDecodeAndPrefillTogetherWithinTheBudget) {
  SynthConfig c = Small(5, 2, 1, 1);
  c.chunked_prefill = true;
  c.steps = 60;
  auto files = RunSim(c);
  const std::string& d = files.lower_bound("truffld-")->second;
  EXPECT_GT(Count(d, "[phase:mixed]"), 0);
  EXPECT_EQ(Count(files["labels.jsonl"], "\"phase\":\"mixed\"") / 4, Count(d, "[phase:mixed]"));
  // No step schedules more tokens than the budget.
  for (size_t at = d.find("[tokens:"); at != std::string::npos; at = d.find("[tokens:", at + 1)) {
    EXPECT_LE(std::stoll(d.substr(at + 8)), c.max_prefill_tokens);
  }
}

TEST(CommScopes, LedgerRecordsScopeAndPeersAndLabelsStayLocal) {
  for (CommScope scope : {CommScope::kGroup, CommScope::kRank, CommScope::kLink}) {
    SynthConfig c = Small(17, 4, 2, 2);
    c.fault_classes = {FaultClass::kCommunication};
    c.comm_scopes = {scope};
    c.intensities = {4.0};
    c.steps = 40;
    std::unique_ptr<Simulator> sim;
    auto files = RunSim(c, &sim);
    SCOPED_TRACE(CommScopeName(scope));
    ASSERT_FALSE(sim->faults().ledger().empty());
    std::map<std::string, std::set<int>> labelled;  // fault id -> ranks whose steps it labels
    const auto& truth = sim->faults().truth();
    for (size_t r = 0; r < truth.size(); ++r) {
      for (const auto& st : truth[r]) {
        EXPECT_EQ(st.faulty[0], 0u);  // communication labels only the horizontal view
        for (int32_t f : st.faults[1]) labelled[sim->faults().ledger()[f].id].insert(static_cast<int>(r));
      }
    }
    for (const auto& e : sim->faults().ledger()) {
      EXPECT_EQ(e.cls, FaultClass::kCommunication);  // no other class stands in when none fits
      EXPECT_EQ(e.scope, scope);
      EXPECT_EQ(e.peer >= 0, scope == CommScope::kLink);
      EXPECT_EQ(!e.group.empty(), scope == CommScope::kGroup);
      const auto it = labelled.find(e.id);
      if (it != labelled.end()) {
        // A slowed transfer is slow on every side that shares it: the TP group for a
        // collective (two ranks per host here), the pipeline partner for a send or a recv.
        std::set<int> sharing;
        if (e.target == "nccl:send" || e.target == "nccl:recv") {
          sharing = {e.rank, e.target == "nccl:send" ? e.rank + 2 : e.rank - 2};
        } else {
          sharing = {e.rank / 2 * 2, e.rank / 2 * 2 + 1};
        }
        EXPECT_EQ(it->second, sharing) << e.id << " " << e.target;
      }
    }
    const std::string& ledger = files["ledger.jsonl"];
    EXPECT_NE(ledger.find(std::string("\"scope\":\"") + CommScopeName(scope) + "\""), std::string::npos);
    if (scope != CommScope::kGroup) {
      EXPECT_NE(ledger.find("\"target\":\"nccl:"), std::string::npos);  // pipeline send/recv targeted too
    }
  }
}

TEST(CommScopes, DefaultMixKeepsAboutHalfTheStepsAbnormal) {
  for (int pp : {1, 2}) {
    SynthConfig c = Small(21, 4, 2, pp);
    c.steps = 120;
    c.layers = 2;
    std::unique_ptr<Simulator> sim;
    RunSim(c, &sim);
    int64_t steps = 0, abnormal = 0;
    for (const auto& rank : sim->faults().truth()) {
      for (const auto& st : rank) {
        ++steps;
        abnormal += (st.faulty[0] | st.faulty[1]) ? 1 : 0;
      }
    }
    SCOPED_TRACE(pp);
    EXPECT_GT(abnormal, steps * 0.35);
    EXPECT_LT(abnormal, steps * 0.65);
  }
}

}  // namespace
}  // namespace truffld::synth
