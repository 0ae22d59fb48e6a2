// Unit tests of truffld-synth's pure logic: random streams, naming, scheduling, intensities,
// and whole in-memory runs (determinism, file framing, fault rate, clean runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "truffld/synth/config.h"
#include "truffld/synth/record_writer.h"
#include "truffld/synth/request_ledger.h"
#include "truffld/synth/rng.h"
#include "truffld/synth/simulator.h"
#include "truffld/synth/workload.h"

namespace truffld::synth {
namespace {

TEST(Rng, SameSeedSameStreamDifferentSaltDifferentStream) {
  Rng a(42, 1), b(42, 1), c(42, 2);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs = differs || x != c.Next();
  }
  EXPECT_TRUE(differs);
}

TEST(Rng, UniformAndIntStayInRange) {
  Rng r(7);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const double u = r.Uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    const int64_t k = r.Int(-3, 5);
    ASSERT_GE(k, -3);
    ASSERT_LE(k, 5);
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

TEST(Naming, StepNameEscapesUnderscoreAndBackslash) {
  EXPECT_EQ(StepRangeName({"a", "b_c", "d\\e"}), "step_execute_model[request_ids:a_b\\_c_d\\\\e]");
  EXPECT_EQ(StepRangeName({"cmpl-1-0"}), "step_execute_model[request_ids:cmpl-1-0]");
}

TEST(Naming, JsonEscape) {
  EXPECT_EQ(JsonEscape("a\"b\\c\n"), "a\\\"b\\\\c\\n");
  EXPECT_EQ(JsonEscape(std::string("\x01", 1)), "\\u0001");
}

TEST(Intensities, NamedLevelsAndLists) {
  auto mild = ParseIntensities("mild");
  ASSERT_TRUE(mild.ok());
  EXPECT_EQ(*mild, (std::vector<double>{1.3, 1.6}));
  auto list = ParseIntensities("1.5,3");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(*list, (std::vector<double>{1.5, 3.0}));
  EXPECT_FALSE(ParseIntensities("0.5").ok());
  EXPECT_FALSE(ParseIntensities("x").ok());
  EXPECT_STREQ(IntensityName(2.5), "strong");
}

TEST(Config, ValidateRejectsBadTopology) {
  SynthConfig c;
  c.out_dir = "x";
  EXPECT_TRUE(c.Validate().ok());
  c.hosts = 3;
  EXPECT_FALSE(c.Validate().ok());
  c.hosts = 1;
  c.out_dir.clear();
  EXPECT_FALSE(c.Validate().ok());
  SynthConfig p;
  EXPECT_FALSE(ApplyPreset("nope", &p).ok());
  EXPECT_TRUE(ApplyPreset("demo", &p).ok());
  EXPECT_EQ(p.ranks, 4);
}

TEST(Scheduler, RespectsBudgetsAndMixesPhases) {
  Scheduler s(3, 0, /*online=*/true, 0.6, /*max_num_seqs=*/48, /*max_prefill_tokens=*/2048);
  int prefill = 0, decode = 0;
  std::map<int, int> buckets;
  for (int i = 0; i < 400; ++i) {
    PlannedStep p = s.Next();
    ASSERT_FALSE(p.request_ids.empty());
    ASSERT_EQ(static_cast<int64_t>(p.request_ids.size()), p.real_seqs);
    if (p.shape.prefill) {
      ++prefill;
      // One request may exceed the budget on its own; several never do.
      if (p.real_seqs > 1) {
        ASSERT_LE(p.shape.tokens, 2048);
      }
    } else {
      ++decode;
      ASSERT_LE(p.real_seqs, 48);
      ASSERT_GE(p.graph_bucket, p.real_seqs);
      ++buckets[p.graph_bucket];
    }
  }
  EXPECT_GT(prefill, 20);
  EXPECT_GT(decode, 100);
  EXPECT_GT(buckets.size(), 2u) << "decode batch sizes should vary";
}

// The request ledger: with chunked prefill a long prompt's chunks run in consecutive steps from
// its first, decode steps follow them, and no step both prefills and decodes one request.
TEST(RequestLedger, ChunksThenDecodesInOrder) {
  Scheduler s(5, 0, /*online=*/true, 0.8, /*max_num_seqs=*/32, /*max_prefill_tokens=*/256, 2.0, /*chunked=*/true);
  RequestLedger ledger;
  for (int i = 0; i < 300; ++i) {
    PlannedStep p = s.Next();
    ASSERT_EQ(p.prefilling.size(), p.request_ids.size());
    ledger.OnStep(0, i, p);
  }
  MemorySink out;
  ASSERT_TRUE(ledger.Write(&out).ok());
  int lines = 0, multi_chunk = 0, decoded = 0;
  size_t at = 0;
  const std::string& d = out.data();
  while (at < d.size()) {
    const size_t nl = d.find('\n', at);
    ASSERT_NE(nl, std::string::npos);
    const std::string line = d.substr(at, nl - at);
    at = nl + 1;
    ++lines;
    auto list = [&](const std::string& key) {
      std::vector<int64_t> v;
      size_t k = line.find("\"" + key + "\":[");
      EXPECT_NE(k, std::string::npos) << line;
      k = line.find('[', k) + 1;
      while (line[k] != ']') {
        size_t used = 0;
        v.push_back(std::stoll(line.substr(k), &used));
        k += used + (line[k + used] == ',' ? 1 : 0);
      }
      return v;
    };
    const std::vector<int64_t> pre = list("prefill_steps"), dec = list("decode_steps");
    for (size_t i = 1; i < pre.size(); ++i) EXPECT_EQ(pre[i], pre[i - 1] + 1) << line;
    if (!pre.empty() && !dec.empty()) {
      EXPECT_GT(dec.front(), pre.back()) << line;
    }
    if (pre.empty()) {
      EXPECT_TRUE(dec.empty()) << line;
    }
    multi_chunk += pre.size() > 1;
    decoded += !dec.empty();
  }
  EXPECT_EQ(static_cast<size_t>(lines), ledger.size());
  EXPECT_GT(multi_chunk, 5) << "prompts longer than the 256-token budget should span several steps";
  EXPECT_GT(decoded, 20);
}

// Runs the simulator into memory sinks.
std::map<std::string, std::string> RunInMemory(SynthConfig cfg, Simulator** keep = nullptr) {
  auto files = std::make_shared<std::map<std::string, MemorySink*>>();
  std::vector<std::unique_ptr<MemorySink>>* owned = new std::vector<std::unique_ptr<MemorySink>>();
  SinkFactory f = [files, owned](const std::string& name) -> Result<std::unique_ptr<ByteSink>> {
    // The simulator owns the sink; keep a copy of the bytes through a forwarding sink.
    struct Fwd final : ByteSink {
      MemorySink* target;
      explicit Fwd(MemorySink* t) : target(t) {}
      Status Write(std::string_view b) override { return target->Write(b); }
      Status Close() override { return Status::Ok(); }
    };
    owned->push_back(std::make_unique<MemorySink>());
    (*files)[name] = owned->back().get();
    return std::unique_ptr<ByteSink>(new Fwd(owned->back().get()));
  };
  cfg.out_dir = "mem";
  auto* sim = new Simulator(cfg, f);
  EXPECT_TRUE(sim->Run().ok());
  std::map<std::string, std::string> out;
  for (auto& [name, sink] : *files) out[name] = sink->data();
  if (keep) *keep = sim; else delete sim;
  delete owned;
  return out;
}

SynthConfig Small(uint64_t seed) {
  SynthConfig c;
  EXPECT_TRUE(ApplyPreset("small", &c).ok());
  c.seed = seed;
  return c;
}

TEST(Simulator, SameSeedIsByteIdenticalOtherSeedIsNot) {
  auto a = RunInMemory(Small(11));
  auto b = RunInMemory(Small(11));
  auto c = RunInMemory(Small(12));
  ASSERT_EQ(a.size(), 5u);  // two dumps, ledger, labels, requests
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Simulator, FilesStartWithMetaEndWithStatsAndAreNotTimeSorted) {
  auto files = RunInMemory(Small(5));
  int dumps = 0;
  for (const auto& [name, data] : files) {
    if (name.rfind("truffld-", 0) != 0) continue;
    ++dumps;
    EXPECT_NE(name.find("-r"), std::string::npos);
    EXPECT_EQ(data.rfind("{\"type\":\"META\"", 0), 0u) << name;
    ASSERT_EQ(data.back(), '\n');
    const size_t last = data.rfind('\n', data.size() - 2) + 1;
    EXPECT_EQ(data.compare(last, 15, "{\"type\":\"STATS\""), 0) << name;
    // The activity buffer is flushed after host records of the same time: a KERNEL line
    // appears after a later NVTX_PUSH line somewhere in the file.
    const size_t first_kernel = data.find("\"type\":\"KERNEL\"");
    const size_t first_push = data.find("\"type\":\"NVTX_PUSH\"");
    EXPECT_LT(first_push, first_kernel);
    EXPECT_NE(data.find("\"type\":\"GRAPH_NODE\""), std::string::npos);
    EXPECT_NE(data.find("original_graph_node_id"), std::string::npos);
    EXPECT_NE(data.find("\"domain\":\"NCCL\""), std::string::npos);
  }
  EXPECT_EQ(dumps, 2);
}

TEST(Simulator, AbnormalShareNearTargetAndCleanRunsHaveNone) {
  SynthConfig c = Small(21);
  c.steps = 150;
  c.layers = 2;
  Simulator* sim = nullptr;
  RunInMemory(c, &sim);
  int64_t steps = 0, abnormal = 0;
  for (const auto& rank : sim->faults().truth()) {
    for (const auto& st : rank) {
      ++steps;
      abnormal += (st.faulty[0] | st.faulty[1]) ? 1 : 0;
    }
  }
  delete sim;
  ASSERT_EQ(steps, 300);
  EXPECT_GT(abnormal, 300 * 0.35);
  EXPECT_LT(abnormal, 300 * 0.65);

  c.fault_classes.clear();
  auto clean = RunInMemory(c);
  EXPECT_TRUE(clean["ledger.jsonl"].empty());
  EXPECT_EQ(clean["labels.jsonl"].find("\"abnormal\":true"), std::string::npos);
  EXPECT_NE(clean["labels.jsonl"].find("\"abnormal\":false"), std::string::npos);
}

TEST(Simulator, WeakFaultsPerturbButDoNotLabel) {
  SynthConfig c = Small(8);
  c.intensities = {1.1};
  Simulator* sim = nullptr;
  auto files = RunInMemory(c, &sim);
  EXPECT_FALSE(sim->faults().ledger().empty());
  for (const auto& e : sim->faults().ledger()) EXPECT_FALSE(e.sufficient);
  delete sim;
  EXPECT_EQ(files["labels.jsonl"].find("\"abnormal\":true"), std::string::npos);
}

TEST(Simulator, EveryFaultClassLabelsItsOwnView) {
  // One class at a time, strong: vertical classes label vertical operators, communication
  // labels NCCL operators in the horizontal view.
  for (FaultClass fc : AllFaultClasses()) {
    SynthConfig c = Small(31);
    c.fault_classes = {fc};
    c.intensities = {4.0};
    c.steps = 40;
    Simulator* sim = nullptr;
    RunInMemory(c, &sim);
    int64_t v = 0, h = 0;
    for (const auto& rank : sim->faults().truth()) {
      for (const auto& st : rank) {
        v += st.faulty[0] ? 1 : 0;
        h += st.faulty[1] ? 1 : 0;
      }
    }
    delete sim;
    SCOPED_TRACE(FaultClassName(fc));
    if (fc == FaultClass::kCommunication) {
      EXPECT_GT(h, 0);
      EXPECT_EQ(v, 0);
    } else if (fc == FaultClass::kContention) {
      EXPECT_GT(v + h, 0);
    } else {
      EXPECT_GT(v, 0);
      EXPECT_EQ(h, 0);
    }
  }
}

TEST(Simulator, CostShareOnlyChangesLabelsNeverTheDumps) {
  // The counterfactual re-run writes nothing and restores the state: the dumps are the same
  // whatever the cost threshold; a zero share absorbs nothing, a large one absorbs cheap faults.
  SynthConfig c = Small(17);
  c.steps = 40;
  auto zero = c, half = c;
  zero.label_min_cost_share = 0;
  half.label_min_cost_share = 0.5;
  Simulator* sim = nullptr;
  auto a = RunInMemory(zero, &sim);
  int64_t touched = 0, with_cost = 0;
  for (const auto& rank : sim->faults().truth()) {
    for (const auto& st : rank) {
      if (!(st.faulty[0] | st.faulty[1])) continue;
      ++touched;
      with_cost += st.cost_ns >= 0 ? 1 : 0;
      EXPECT_FALSE(st.absorbed);
    }
  }
  delete sim;
  EXPECT_GT(touched, 0);
  EXPECT_EQ(with_cost, touched) << "every touched step has a counterfactual cost";
  auto b = RunInMemory(half);
  for (const auto& [name, data] : a) {
    if (name.rfind("truffld-", 0) == 0) {
      EXPECT_EQ(data, b[name]) << name;
    }
  }
  EXPECT_EQ(a["labels.jsonl"].find("\"absorbed\":true"), std::string::npos);
  EXPECT_NE(b["labels.jsonl"].find("\"absorbed\":true"), std::string::npos);
}

}  // namespace
}  // namespace truffld::synth
