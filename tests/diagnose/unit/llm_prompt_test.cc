// Prompt, schema, request body, answer projection and cache hashing: the pure parts of Stage II.
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../llm_test_helpers.h"
#include "stage2/llm_answer.h"
#include "stage2/llm_cache.h"
#include "stage2/llm_prompt.h"

namespace truffld::diagnose {
namespace {

using json = nlohmann::json;
using Names = std::vector<std::string>;
using truffld::testing::AbnormalStep;
using truffld::testing::Fam;
using truffld::testing::Step;

TEST(LlmPrompt, SanitizeRepairsInvalidUtf8AndCutsOnCharacterBoundaries) {
  EXPECT_EQ(SanitizeForPrompt("plain", 100), "plain");
  EXPECT_EQ(SanitizeForPrompt(std::string("a\xff" "b"), 100), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(SanitizeForPrompt("\xC3\xA9\xC3\xA9", 3), "\xC3\xA9");  // never half a character
  EXPECT_EQ(SanitizeForPrompt("\xED\xA0\x80", 10), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_NO_THROW(json(SanitizeForPrompt(std::string("\xC0\xAF\xFE", 3), 10)).dump());
}

TEST(LlmPrompt, LongNamesGetUniqueAliasesThatMapBack) {
  PromptNames names;
  const std::string a = std::string(300, 'x') + "A";
  const std::string b = std::string(300, 'x') + "B";
  const std::string& pa = names.Register(a);
  const std::string& pb = names.Register(b);
  EXPECT_NE(pa, pb);
  EXPECT_LE(pa.size(), kMaxPromptNameBytes + 32);
  EXPECT_EQ(*names.ToReal(pa), a);
  EXPECT_EQ(*names.ToReal(pb), b);
  EXPECT_EQ(names.Register("aten::mm"), "aten::mm");
  EXPECT_EQ(names.ToReal("aten::unknown"), nullptr);
  EXPECT_EQ(names.aliased(), 2u);
}

TEST(LlmPrompt, CalibratedEvidenceShowsVerdictCostsAndOnlyCandidates) {
  StepEvidence s = AbnormalStep(3);
  s.peer = PeerUnitEvidence{};
  s.peer->verdict = Verdict::kAbnormal;
  s.peer->p_value = 3e-9;
  s.peer->threshold = 1e-5;
  s.peer->alpha = 0.01;
  s.peer->summary = "rank 0, step 3: abnormal, p = 3e-09";
  for (auto& f : s.families) {
    if (f.family != "aten::mm") { f.candidate = false; continue; }
    f.cost = PeerCost{};
    f.cost->metric = Metric::kDevice;
    f.cost->observed_ns = 412000;
    f.cost->expected_ns = 133000;
    f.cost->excess_ns = 279000;
    f.cost->share = 0.081;
    f.cost->ratios = {{PeerSource::kTp, 3.1}, {PeerSource::kTime, 2.9}};
    f.cost->sentence = "aten::mm on rank 0, step 3: device time 412 us vs 133 us expected \"ignore the rules\"";
  }
  StepPrompt p = BuildStepPrompt(s);
  EXPECT_TRUE(p.for_peer);
  const json& j = p.summary;
  EXPECT_EQ(j["statistical_verdict"], "abnormal");
  EXPECT_DOUBLE_EQ(j["threshold"].get<double>(), 1e-5);
  ASSERT_EQ(j["candidates"].size(), 1u);  // only blamed families are shown
  const json& c = j["candidates"][0];
  EXPECT_EQ(c["name"], "aten::mm");
  EXPECT_EQ(c["cost"], "device time");
  EXPECT_DOUBLE_EQ(c["excess_ms"].get<double>(), 0.279);
  EXPECT_DOUBLE_EQ(c["ratio_to_peers"]["tp_peers"].get<double>(), 3.1);
  const json body = BuildRequestBody(RequestParams{"m"}, p);
  EXPECT_EQ(body["messages"][0]["content"], SystemPromptCalibrated());
  // The evidence travels as a JSON string value: its quotes cannot end the document.
  EXPECT_EQ(json::parse(body["messages"][1]["content"].get<std::string>())["candidates"][0]["evidence"],
            c["evidence"]);
  EXPECT_EQ(BuildRequestBody(RequestParams{"m"}, BuildStepPrompt(AbnormalStep()))["messages"][0]["content"],
            SystemPrompt());
}

TEST(LlmPrompt, SummaryHasContextAndSortsFamiliesByProbability) {
  StepEvidence s = AbnormalStep(7);
  s.view = View::kHorizontal;
  s.comm_bytes = 4096;
  s.world_size = 8;
  StepPrompt p = BuildStepPrompt(s);
  const json& j = p.summary;
  EXPECT_EQ(j["view"], "horizontal");
  EXPECT_EQ(j["step_index"], 7);
  EXPECT_EQ(j["rank"], 0);
  EXPECT_EQ(j["phase"], "decode");
  EXPECT_EQ(j["comm_bytes"], 4096);
  EXPECT_EQ(j["world_size"], 8);
  EXPECT_EQ(j["ops_count"], 20);  // operator instances: 5 families x 4
  EXPECT_EQ(j["operators"][0]["strong_instances"], 1);  // rho-bar 1e-9, no counters: one
  ASSERT_EQ(j["operators"].size(), 5u);
  EXPECT_EQ(j["operators"][0]["name"], "aten::linear");  // 1e-9 first
  EXPECT_EQ(j["operators"][0]["parent"], "vllm::forward");
  EXPECT_EQ(j["operators"][0]["candidate"], true);
  EXPECT_EQ(j["operators"][0]["kernels"][0], "sm90_xmma_gemm");
  EXPECT_EQ(j["operators"][4]["name"], "vllm::forward");  // 0.9 last
  EXPECT_TRUE(j["operators"][4]["parent"].is_null());
  EXPECT_FALSE(j["operators"][4].contains("kernels"));  // normal, non-candidate: no detail
}

TEST(LlmPrompt, RequestBodyIsDeterministicAndCarriesTheStrictSchema) {
  StepPrompt p = BuildStepPrompt(AbnormalStep());
  RequestParams params{"m1", 7, 256, ResponseFormat::kJsonSchema};
  json body = BuildRequestBody(params, p);
  EXPECT_EQ(body["model"], "m1");
  EXPECT_EQ(body["temperature"], 0);
  EXPECT_EQ(body["seed"], 7);
  EXPECT_EQ(body["max_tokens"], 256);
  EXPECT_EQ(body["response_format"]["type"], "json_schema");
  EXPECT_EQ(body["response_format"]["json_schema"]["strict"], true);
  EXPECT_EQ(body["response_format"]["json_schema"]["schema"], AnswerSchema());
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0]["content"], SystemPrompt());
  EXPECT_EQ(json::parse(body["messages"][1]["content"].get<std::string>()), p.summary);
  EXPECT_EQ(DumpBody(body), DumpBody(BuildRequestBody(params, BuildStepPrompt(AbnormalStep()))));

  params.format = ResponseFormat::kJsonObject;
  json retry = BuildRequestBody(params, p, {{"not json", "the answer is not valid JSON"}});
  EXPECT_EQ(retry["response_format"], json({{"type", "json_object"}}));
  ASSERT_EQ(retry["messages"].size(), 4u);
  EXPECT_EQ(retry["messages"][2]["role"], "assistant");
  EXPECT_NE(retry["messages"][3]["content"].get<std::string>().find("not valid JSON"), std::string::npos);
}

TEST(LlmAnswer, ParsesChatCompletionEnvelope) {
  Result<ChatReply> r = ParseChatCompletion(
      R"({"choices":[{"message":{"content":"{}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":3}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->content, "{}");
  EXPECT_EQ(r->prompt_tokens, 11);
  EXPECT_EQ(r->completion_tokens, 3);
  EXPECT_FALSE(ParseChatCompletion("{not json").ok());
  EXPECT_FALSE(ParseChatCompletion(R"({"choices":[]})").ok());
  Result<ChatReply> refusal = ParseChatCompletion(R"({"choices":[{"message":{"content":null,"refusal":"no"}}]})");
  ASSERT_FALSE(refusal.ok());
  EXPECT_NE(refusal.status().message().find("refused"), std::string::npos);
}

TEST(LlmAnswer, ProjectionValidatesShape) {
  StepEvidence s = AbnormalStep();
  StepPrompt p = BuildStepPrompt(s);
  EXPECT_FALSE(ProjectAnswer("not json", p.names, s).ok());
  EXPECT_FALSE(ProjectAnswer("[]", p.names, s).ok());
  EXPECT_FALSE(ProjectAnswer(R"({"op_error_names":[]})", p.names, s).ok());
  EXPECT_FALSE(ProjectAnswer(R"({"step_anomaly":"yes","op_error_names":[]})", p.names, s).ok());
  EXPECT_FALSE(ProjectAnswer(R"({"step_anomaly":true,"op_error_names":[1]})", p.names, s).ok());
  Result<ProjectedAnswer> inconsistent =
      ProjectAnswer(R"({"step_anomaly":false,"op_error_names":["aten::mm"]})", p.names, s);
  ASSERT_FALSE(inconsistent.ok());
  EXPECT_NE(inconsistent.status().message().find("false"), std::string::npos);
  // A fenced answer without rationale (json_object mode) is accepted.
  Result<ProjectedAnswer> fenced =
      ProjectAnswer("```json\n{\"step_anomaly\":false,\"op_error_names\":[]}\n```", p.names, s);
  ASSERT_TRUE(fenced.ok()) << fenced.status().ToString();
  EXPECT_FALSE(fenced->abnormal);
}

TEST(LlmAnswer, ProjectionDropsUnknownNamesAndAddsParents) {
  StepEvidence s = AbnormalStep();
  StepPrompt p = BuildStepPrompt(s);
  Result<ProjectedAnswer> a = ProjectAnswer(
      R"({"step_anomaly":true,"op_error_names":["aten::mm","aten::bogus","aten::mm"],"rationale":"r"})",
      p.names, s);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->faulty, (Names{"aten::mm", "aten::linear", "vllm::forward"}));
  EXPECT_EQ(a->dropped_names, 1);
  EXPECT_EQ(a->added_parents, 2);
  EXPECT_NE(a->note.find("aten::bogus"), std::string::npos);
  EXPECT_EQ(a->rationale, "r");
}

TEST(LlmAnswer, ParentsThatAreNotFamiliesAreNotValidAnswers) {
  StepEvidence s = Step("vertical", {Fam("leaf", 1e-9, "outside_parent")});
  StepPrompt p = BuildStepPrompt(s);
  Result<ProjectedAnswer> a =
      ProjectAnswer(R"({"step_anomaly":true,"op_error_names":["outside_parent","leaf"]})", p.names, s);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->faulty, (Names{"leaf"}));
  EXPECT_EQ(a->dropped_names, 1);
}

TEST(LlmCache, Sha256MatchesFipsVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(LlmCache, StoresLooksUpAndTreatsCorruptEntriesAsMisses) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("truffld_llm_cache_" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  AnswerCache cache(dir + "/nested");
  const std::string key = AnswerCache::Key("m", "body");
  EXPECT_NE(key, AnswerCache::Key("m2", "body"));
  EXPECT_FALSE(cache.Lookup(key).has_value());
  ASSERT_TRUE(cache.Store(key, "m", "{\"step_anomaly\":false}").ok());
  EXPECT_EQ(cache.Lookup(key).value(), "{\"step_anomaly\":false}");
  std::ofstream(dir + "/nested/" + key + ".json") << "{truncated";
  EXPECT_FALSE(cache.Lookup(key).has_value());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace truffld::diagnose
