// Rules, request-id parsing and family normalisation.
#include "truffld/merge/classify.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

namespace truffld::merge {
namespace {

TEST(Family, BackendFrontendCommApiKernel) {
  EXPECT_EQ(NormaliseFamily(Layer::kBackend, "aten::mm, seq = 0, op_id = 426392"), "aten::mm");
  EXPECT_EQ(NormaliseFamily(Layer::kFrontend, "torch.nn.functional.linear /path/file.py:123"),
            "torch.nn.functional.linear");
  EXPECT_EQ(NormaliseFamily(Layer::kComm, "ncclAllReduce comm=0x1"), "ncclAllReduce");
  EXPECT_EQ(NormaliseFamily(Layer::kComm, "nccl:all_reduce, bytes=4"), "nccl:all_reduce");
  EXPECT_EQ(NormaliseFamily(Layer::kRuntime, "cudaLaunchKernel"), "cudaLaunchKernel");
  EXPECT_EQ(NormaliseFamily(Layer::kRuntime, "cudaDeviceSynchronize_v3020"), "cudaDeviceSynchronize");
  EXPECT_EQ(NormaliseFamily(Layer::kDriver, "cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(NormaliseFamily(Layer::kStep, "step_execute_model[request_ids:0_1]"), "step");
  EXPECT_EQ(NormaliseFamily(Layer::kKernel,
                            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                            "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"),
            "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(NormaliseFamily(Layer::kKernel, "ampere_sgemm_128x64_tn"), "ampere_sgemm_128x64_tn");
  EXPECT_EQ(NormaliseFamily(Layer::kKernel, "void (anonymous namespace)::softmax_warp<float>(float*)"),
            "(anonymous namespace)::softmax_warp");
  // Mangled and truncated, as CUPTI sometimes reports it.
  EXPECT_EQ(NormaliseFamily(Layer::kKernel, "_ZN2at6native29vectorized_elementwise_kernelLi4ENS0_13UnaryFuncorIfffNS0"),
            "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(NormaliseFamily(Layer::kMemcpy, "Memcpy HtoD (Pageable -> Device)"), "Memcpy HtoD");
}

TEST(Rules, DefaultsClassifyEngineNames) {
  Rules r = Rules::Defaults();
  EXPECT_EQ(r.Classify("step_execute_model[request_ids:0_1_2]", "", ""), Layer::kStep);
  EXPECT_EQ(r.Classify("ProfilerStep#3", "", "user_annotation"), Layer::kStep);
  EXPECT_EQ(r.Classify("run_batch", "", ""), Layer::kStep);
  EXPECT_EQ(r.Classify("torch.nn.functional.embedding .../functional.py:2437", "", ""), Layer::kFrontend);
  EXPECT_EQ(r.Classify("Linear.forward", "", ""), Layer::kFrontend);
  EXPECT_EQ(r.Classify("aten::index_select, op_id = 4", "", ""), Layer::kBackend);
  EXPECT_EQ(r.Classify("vllm::unified_attention", "", "cpu_op"), Layer::kBackend);
  EXPECT_EQ(r.Classify("ncclAllReduce", "", ""), Layer::kComm);
  EXPECT_EQ(r.Classify("anything", "NCCL", ""), Layer::kComm);
  EXPECT_EQ(r.Classify("c10d::allreduce_", "", "cpu_op"), Layer::kComm);
  EXPECT_EQ(r.Classify("record_param_comms", "", "cpu_op"), Layer::kComm);
  EXPECT_EQ(r.Classify("my_python_thing", "", "python_function"), Layer::kOther);
}

TEST(Rules, RealEngineStepAnnotationsAreSteps) {
  // Names as they appear in real PyTorch-profiler traces of vLLM and SGLang (shared/data).
  Rules r = Rules::Defaults();
  EXPECT_EQ(r.Classify("execute_context_1(888_788544)_generation_0(0)", "", "user_annotation"), Layer::kStep);
  EXPECT_EQ(r.Classify("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086)", "", "user_annotation"),
            Layer::kStep);
  EXPECT_EQ(r.Classify("step[EXTEND bs=15 toks=15360]", "", "user_annotation"), Layer::kStep);
  EXPECT_EQ(r.Classify("step[DECODE bs=32 toks=32]", "", "user_annotation"), Layer::kStep);
  EXPECT_NE(r.Classify("execute_fused_kernel", "", ""), Layer::kStep);
  EXPECT_NE(r.Classify("capture_32_FULL", "", "user_annotation"), Layer::kStep);
  // Kineto's GPU-side copy of the same annotation is not a second step.
  EXPECT_EQ(r.Classify("execute_context_1(888_788544)_generation_0(0)", "", "gpu_user_annotation"), Layer::kOther);
  EXPECT_STREQ(PhaseFromStepName("execute_context_1(888_788544)_generation_0(0)"), "prefill");
  EXPECT_STREQ(PhaseFromStepName("execute_32_context_0(sq0sk0)_generation_32(sq32sk55086)"), "decode");
  EXPECT_STREQ(PhaseFromStepName("execute_40_context_2(x)_generation_8(y)"), "mixed");
  EXPECT_STREQ(PhaseFromStepName("step[EXTEND bs=15 toks=15360]"), "prefill");
  EXPECT_STREQ(PhaseFromStepName("step[DECODE bs=32]"), "decode");
}

TEST(Rules, CollectivesAreWordsNotPartsOfOpNames) {
  Rules r = Rules::Defaults();
  // ATen ops that merely contain a collective's word are backend ops, not communication.
  EXPECT_EQ(r.Classify("aten::broadcast_tensors", "", "cpu_op"), Layer::kBackend);
  EXPECT_EQ(r.Classify("aten::broadcast_to, seq = 1", "", ""), Layer::kBackend);
  EXPECT_NE(r.Classify("torch.broadcast_tensors", "", ""), Layer::kComm);
  EXPECT_NE(r.Classify("broadcast_shapes_helper", "", ""), Layer::kComm);
  // Collectives by name.
  EXPECT_EQ(r.Classify("torch.distributed.all_reduce", "", ""), Layer::kComm);
  EXPECT_EQ(r.Classify("tensor_model_parallel_all_reduce", "", "python_function"), Layer::kComm);
  EXPECT_EQ(r.Classify("nccl:_all_gather_base", "", "user_annotation"), Layer::kComm);
  EXPECT_EQ(r.Classify("dist.all_gather_into_tensor", "", ""), Layer::kComm);
  EXPECT_EQ(r.Classify("broadcast_object_list", "", ""), Layer::kComm);
  EXPECT_EQ(r.Classify("ReduceScatter", "", ""), Layer::kComm);
  EXPECT_EQ(r.Classify("send", "", ""), Layer::kComm);
}

TEST(Rules, UserRulesComeFirstAndCanReplaceDefaults) {
  auto r = Rules::FromJson(R"J({"schema":"truffld.rules/1","rules":[
      {"layer":"step","name_regex":"^my_step"},
      {"layer":"comm","domain":"MyComm"},
      {"layer":"frontend_op","name_regex":"^aten::special","ignore_case":true}],
      "request_regex":"reqs=([^;]*)"})J",
                           "inline");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Classify("my_step 4", "", ""), Layer::kStep);
  EXPECT_EQ(r->Classify("x", "MyComm", ""), Layer::kComm);
  EXPECT_EQ(r->Classify("ATEN::SPECIAL_x", "", ""), Layer::kFrontend);
  EXPECT_EQ(r->Classify("aten::mm", "", ""), Layer::kBackend);  // defaults still there
  EXPECT_EQ(r->ParseRequests("my_step reqs=a_b;"), (std::vector<std::string>{"a", "b"}));
  auto only = Rules::FromJson(R"({"replace_defaults":true,"rules":[{"layer":"backend_op","name_regex":"^x"}]})", "inline");
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(only->Classify("aten::mm", "", ""), Layer::kOther);
}

TEST(Rules, BadRulesFailWithLocation) {
  auto bad_json = Rules::FromJson("{not json", "r.json");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_NE(bad_json.status().message().find("r.json"), std::string::npos);
  auto bad_layer = Rules::FromJson(R"({"rules":[{"layer":"kernel"}]})", "r.json");
  ASSERT_FALSE(bad_layer.ok());
  EXPECT_NE(bad_layer.status().message().find("rules[0]"), std::string::npos);
  auto bad_re = Rules::FromJson(R"({"rules":[{"layer":"step","name_regex":"(unclosed"}]})", "r.json");
  EXPECT_FALSE(bad_re.ok());
  Rules d = Rules::Defaults();
  EXPECT_FALSE(d.SetRequestRegex("no_group").ok());
  EXPECT_FALSE(Rules::Load("/nonexistent/rules.json").ok());
}

TEST(Requests, DefaultPatternWithEscapes) {
  Rules r = Rules::Defaults();
  EXPECT_EQ(r.ParseRequests("step_execute_model[request_ids:0_1_2]"), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(r.ParseRequests("step_execute_model[request_ids:cmpl\\_a\\\\b_7]"),
            (std::vector<std::string>{"cmpl_a\\b", "7"}));
  EXPECT_TRUE(r.ParseRequests("step_execute_model").empty());
  EXPECT_TRUE(r.ParseRequests("step_execute_model[request_ids:]").empty());
}

TEST(Requests, AStepNamingHundredsOfRequestsKeepsThemAll) {
  // 300 ids of 40 bytes: a 12 KB name. Only its first 4 KiB were read once: 97 ids and a
  // bogus last one ("cmp...") cut in the middle, and no phase.
  std::string name = "step_execute_model[request_ids:";
  std::vector<std::string> want;
  for (int i = 0; i < 300; ++i) {
    char id[64];
    std::snprintf(id, sizeof id, "cmpl-%08d-%026x", i, i * 2654435761u);
    want.push_back(id);
    name += (i ? "_" : "") + want.back();
  }
  name += "][phase:decode][tokens:300]";
  ASSERT_GT(name.size(), 12000u);
  Rules r = Rules::Defaults();
  EXPECT_EQ(r.ParseRequests(name), want);
  EXPECT_FALSE(r.RequestsCut(name));
  EXPECT_STREQ(PhaseFromStepName(name), "decode");
}

TEST(Requests, TheDefaultPatternReadByHandAgreesWithTheRegex) {
  Rules by_hand = Rules::Defaults();
  Rules by_regex = Rules::Defaults();  // the same pattern spelled differently: std::regex runs it
  ASSERT_TRUE(by_regex.SetRequestRegex(R"(request_ids:((?:[^\]\\]|\\.)*)(?:))").ok());
  for (const char* n : {"step_execute_model[request_ids:0_1_2]", "x request_ids:a\\_b]c request_ids:d]",
                        "request_ids:", "request_ids:a\\", "request_ids:a\\]b]", "request_ids:a\\\nb]",
                        "request_ids:a\\\rb]", "no ids here", "request_ids:__a__", "request_ids:a_b",
                        "[request_ids:\\\\_]", "request_ids:a\nb_c]"}) {
    EXPECT_EQ(by_hand.ParseRequests(n), by_regex.ParseRequests(n)) << n;
  }
  // Random names built from the pieces that matter, all under the regex's 4 KiB.
  const std::vector<std::string> pieces = {"request_ids:", "a", "b7", "_", "\\", "]", "[", "\n", "\r", "x:"};
  std::mt19937 rng(30);
  for (int k = 0; k < 3000; ++k) {
    std::string n;
    const int len = 1 + int(rng() % 24);
    for (int i = 0; i < len; ++i) n += pieces[rng() % pieces.size()];
    ASSERT_EQ(by_hand.ParseRequests(n), by_regex.ParseRequests(n)) << ::testing::PrintToString(n);
  }
}

TEST(Requests, CutListsAreReported) {
  Rules r = Rules::Defaults();
  EXPECT_TRUE(r.RequestsCut("step_execute_model[request_ids:a_b_cm"));          // list never closed
  EXPECT_TRUE(r.RequestsCut("step_execute_model[request_ids:a_b][phase:dec"));  // cut after it
  EXPECT_TRUE(r.RequestsCut("step_execute_model[request_ids:a\\]"));            // ']' escaped
  EXPECT_FALSE(r.RequestsCut("step_execute_model[request_ids:a_b][phase:decode]"));
  EXPECT_FALSE(r.RequestsCut("exec[request_ids:a_b] graph"));                  // text after the tags
  EXPECT_TRUE(r.RequestsCut("step_execute_model[request_ids:a][phase:decode][tok"));  // the last tag cut
  EXPECT_FALSE(r.RequestsCut("ProfilerStep#3"));
  EXPECT_FALSE(r.RequestsCut("step_execute_model[empty]"));
  ASSERT_TRUE(r.SetRequestRegex("reqs=([^;]*)").ok());  // a user's pattern reads 4 KiB
  EXPECT_FALSE(r.RequestsCut("my_step reqs=a_b;"));
  EXPECT_TRUE(r.RequestsCut("my_step reqs=" + std::string(5000, 'a')));
}

TEST(Phase, FromStepName) {
  EXPECT_STREQ(PhaseFromStepName("step prefill"), "prefill");
  EXPECT_STREQ(PhaseFromStepName("decode step"), "decode");
  EXPECT_STREQ(PhaseFromStepName("prefill+decode"), "mixed");
  EXPECT_STREQ(PhaseFromStepName("step_execute_model"), "unknown");
}

TEST(Phase, ExplicitTagAfterRequestIdsWins) {
  // A request id that happens to contain a phase word must not decide the phase.
  EXPECT_STREQ(PhaseFromStepName("step_execute_model[request_ids:decode-1_b][phase:prefill]"), "prefill");
  EXPECT_STREQ(PhaseFromStepName("step_execute_model[request_ids:prefill7][phase:decode]"), "decode");
  EXPECT_STREQ(PhaseFromStepName("step_execute_model[request_ids:a][phase:mixed]"), "mixed");
  // Unknown tag values fall back to words in the name.
  EXPECT_STREQ(PhaseFromStepName("step_execute_model[request_ids:a][phase:warmup]"), "unknown");
  EXPECT_STREQ(PhaseFromStepName("decode[phase:bogus"), "decode");
  // The request ids are still parsed in front of the tag.
  Rules r = Rules::Defaults();
  EXPECT_EQ(r.ParseRequests("step_execute_model[request_ids:a_b][phase:decode]"),
            (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace truffld::merge
