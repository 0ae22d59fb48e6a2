// Steps in engines' own PyTorch-profiler traces (with_stack=True, no ProfilerStep, no truffld
// annotation): vLLM's execute_model and SGLang's run_batch are python_function events whose
// names are "path.py(line): function", in the shapes the real traces of ../shared/data show.
#include <gtest/gtest.h>

#include <string>

#include "truffld/merge/import_kineto.h"
#include "truffld/merge/pipeline.h"
#include "writers/step_phase.h"

namespace truffld::merge {
namespace {

// One python_function / cpu_op / runtime / kernel event of a Kineto document (times in us).
std::string Py(const std::string& name, double ts, double dur) {
  return R"({"ph":"X","cat":"python_function","name":")" + name + R"(","pid":7,"tid":7,"ts":)" +
         std::to_string(ts) + R"(,"dur":)" + std::to_string(dur) + "},\n";
}
std::string Op(const std::string& name, double ts, double dur, int corr) {
  return R"({"ph":"X","cat":"cpu_op","name":")" + name + R"(","pid":7,"tid":7,"ts":)" + std::to_string(ts) +
         R"(,"dur":)" + std::to_string(dur) + "},\n" +
         R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":7,"tid":7,"ts":)" +
         std::to_string(ts + 1) + R"(,"dur":1,"args":{"correlation":)" + std::to_string(corr) + "}},\n" +
         R"({"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":)" + std::to_string(ts + 3) +
         R"(,"dur":2,"args":{"correlation":)" + std::to_string(corr) + "}},\n";
}

MergeResult MergeKineto(std::string events) {
  events.erase(events.size() - 2);  // the last ",\n"
  const std::string doc = "{\"traceEvents\": [\n" + events + "\n]}";
  auto tf = ImportKinetoFromBuffer(doc, "engine.json", ImportOptions{});
  EXPECT_TRUE(tf.ok()) << tf.status().ToString();
  std::vector<TraceFile> files;
  files.push_back(std::move(tf).value());
  auto r = Merge(std::move(files), MergeOptions{});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

TEST(EngineProfilerSteps, VllmV1ExecuteModelIsTheStepAndTheWorkerWrapperWins) {
  std::string ev;
  for (int s = 0; s < 3; ++s) {
    const double t = 1000.0 * s;
    ev += Py("vllm/v1/worker/gpu_worker.py(447): execute_model", t, 900);
    ev += Py("/usr/lib/python3/dist-packages/vllm/v1/worker/gpu_model_runner.py(2907): execute_model", t + 10, 880);
    ev += Py("vllm/v1/worker/gpu_model_runner.py(1297): _prepare_inputs", t + 20, 50);
    ev += Op("aten::mm", t + 100, 20, 10 + s);
  }
  MergeResult r = MergeKineto(ev);
  EXPECT_EQ(r.summary.total.steps, 3u);
  ASSERT_FALSE(r.trees.empty());
  EXPECT_EQ(r.Name(r.node(r.trees[0].root)), "vllm/v1/worker/gpu_worker.py(447): execute_model");
}

TEST(EngineProfilerSteps, SglangRunBatchAndForwardBatchGenerationAreSteps) {
  std::string ev;
  for (int s = 0; s < 2; ++s) {
    const double t = 1000.0 * s;
    ev += Py("/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py(2919): _run_batch_inner", t, 900);
    ev += Py("/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker.py(445): forward_batch_generation",
             t + 30, 800);
    ev += Op("aten::mm", t + 100, 20, 10 + s);
  }
  // A trace cut where only the TP worker's range is left is still one step.
  ev += Py("sglang/srt/managers/tp_worker.py(445): forward_batch_generation", 5000, 800);
  ev += Op("aten::mm", 5100, 20, 30);
  MergeResult r = MergeKineto(ev);
  EXPECT_EQ(r.summary.total.steps, 3u);
}

// SGLang's model runner says what the batch was: forward_extend (prefill) or forward_decode.
TEST(EngineProfilerSteps, SglangStepsTakeTheirPhaseFromTheModelRunner) {
  std::string ev;
  const char* runner[] = {"forward_extend", "forward_decode"};
  for (int s = 0; s < 2; ++s) {
    const double t = 1000.0 * s;
    ev += Py("/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py(2919): _run_batch_inner", t, 900);
    ev += Py(std::string("/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py(3003): ") + runner[s],
             t + 40, 700);
    ev += Op("aten::mm", t + 100, 20, 10 + s);
  }
  ev += Py("vllm/v1/worker/gpu_model_runner.py(2907): execute_model", 3000, 900);  // says nothing
  ev += Op("aten::mm", 3100, 20, 40);
  MergeResult r = MergeKineto(ev);
  std::vector<std::string> phases;
  for (const Tree& t : r.trees)
    if (t.view == View::kVertical) phases.push_back(StepPhase(r, t));
  EXPECT_EQ(phases, (std::vector<std::string>{"prefill", "decode", "unknown"}));
}

// The engines' own step annotations, under a Python-frame step or as the step, give its phase,
// batch and tokens (the shapes of ../shared/data's vLLM and SGLang traces).
TEST(EngineProfilerSteps, EngineAnnotationsGiveBatchAndTokens) {
  std::string ev;
  ev += Py("vllm/v1/worker/gpu_model_runner.py(2907): execute_model", 0, 900);
  ev += R"x({"ph":"X","cat":"user_annotation","name":"execute_context_1(888_788544)_generation_0(0)","pid":7,"tid":7,"ts":10,"dur":800},)x"
        "\n";
  ev += Op("aten::mm", 100, 20, 1);
  ev += Py("vllm/v1/worker/gpu_model_runner.py(2907): execute_model", 1000, 900);
  ev += R"x({"ph":"X","cat":"user_annotation","name":"execute_32_context_2(9_81)_generation_30(30)","pid":7,"tid":7,"ts":1010,"dur":800},)x"
        "\n";
  ev += Op("aten::mm", 1100, 20, 2);
  ev += R"x({"ph":"X","cat":"user_annotation","name":"step[DECODE bs=32 toks=32]","pid":7,"tid":7,"ts":2000,"dur":800},)x"
        "\n";
  ev += Op("aten::mm", 2100, 20, 3);
  MergeResult r = MergeKineto(ev);
  std::vector<std::string> phases;
  std::vector<int64_t> batch, tokens;
  for (const Tree& t : r.trees) {
    if (t.view != View::kVertical) continue;
    phases.push_back(StepPhase(r, t));
    const EngineStepCounts c = CountsFromStepName(StepAnnotation(r, t));
    batch.push_back(c.batch);
    tokens.push_back(c.tokens);
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"prefill", "mixed", "decode"}));
  EXPECT_EQ(batch, (std::vector<int64_t>{1, 32, 32}));
  EXPECT_EQ(tokens, (std::vector<int64_t>{-1, -1, 32}));
  EXPECT_EQ(CountsFromStepName("step[EXTEND bs=15 toks=15360]").tokens, 15360);
  EXPECT_EQ(CountsFromStepName("execute_model").batch, -1);
  EXPECT_EQ(CountsFromStepName("step_execute_model[request_ids:1_2]").batch, -1);
}

TEST(EngineProfilerSteps, OtherFunctionsOfTheSameFilesAreNotSteps) {
  std::string ev;
  ev += Py("vllm/v1/worker/gpu_model_runner.py(1297): _prepare_inputs", 0, 50);
  ev += Py("vllm/v1/worker/gpu_model_runner.py(2726): _model_forward", 100, 50);
  ev += Py("my_project/vllm_like/runner.py(12): execute_model_wrapper", 200, 50);
  ev += Py("sglang/srt/model_executor/forward_batch_info.py(133): is_decode", 300, 5);
  ev += Op("aten::mm", 400, 20, 1);
  MergeResult r = MergeKineto(ev);
  // No step range: one implicit step.
  EXPECT_EQ(r.summary.total.steps, 1u);
  EXPECT_EQ(r.summary.total.implicit_steps, 1u);
}

}  // namespace
}  // namespace truffld::merge
