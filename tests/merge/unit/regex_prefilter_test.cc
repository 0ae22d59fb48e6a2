// RegexPrefilter: what it concludes from regex text, and that the rules with prefilters classify
// (and parse request ids from) every name exactly as the plain regexes do.
#include "truffld/merge/regex_prefilter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "truffld/merge/classify.h"

namespace truffld::merge {
namespace {

using V = RegexPrefilter::Verdict;

TEST(RegexPrefilter, AnalysesAnchoredLiteralsAndLeadingLiterals) {
  auto f = RegexPrefilter::Analyse("^aten::", false);
  EXPECT_TRUE(f.anchored);
  EXPECT_TRUE(f.exact);
  EXPECT_EQ(f.prefixes, (std::vector<std::string>{"aten::"}));
  EXPECT_EQ(f.Check("aten::mm"), V::kYes);
  EXPECT_EQ(f.Check("xaten::mm"), V::kNo);

  f = RegexPrefilter::Analyse("^c10d::|^record_param_comms|^gloo:", false);
  EXPECT_EQ(f.prefixes, (std::vector<std::string>{"c10d::", "record_param_comms", "gloo:"}));
  EXPECT_EQ(f.Check("gloo:x"), V::kYes);

  f = RegexPrefilter::Analyse("^torch\\.nn\\.functional\\.", false);
  EXPECT_EQ(f.prefixes, (std::vector<std::string>{"torch.nn.functional."}));

  f = RegexPrefilter::Analyse("^step\\[[A-Z_]+\\b", false);  // literal prefix, then more regex
  EXPECT_EQ(f.prefixes, (std::vector<std::string>{"step["}));
  EXPECT_FALSE(f.exact);
  EXPECT_EQ(f.Check("step[DECODE"), V::kMaybe);
  EXPECT_EQ(f.Check("stop[DECODE"), V::kNo);

  f = RegexPrefilter::Analyse("^nccl", true);  // case-insensitive prefix
  EXPECT_EQ(f.Check("NCCLAllReduce"), V::kYes);

  f = RegexPrefilter::Analyse("^ab?c", false);  // optional char: only "a" is required
  EXPECT_EQ(f.prefixes, (std::vector<std::string>{"a"}));
  f = RegexPrefilter::Analyse("^ab+c", false);  // at least one b
  EXPECT_EQ(f.prefixes, (std::vector<std::string>{"ab"}));

  f = RegexPrefilter::Analyse("request_ids:((?:[^\\]\\\\]|\\\\.)*)", false);
  EXPECT_FALSE(f.anchored);
  EXPECT_EQ(f.contains_any, (std::vector<std::string>{"request_ids:"}));
  EXPECT_EQ(f.Check("aten::mm"), V::kNo);
  EXPECT_EQ(f.Check("step[request_ids:1_2]"), V::kMaybe);

  f = RegexPrefilter::Analyse("^[A-Za-z_]+::", false);  // anchored, no literal: position 0 only
  EXPECT_TRUE(f.anchored);
  EXPECT_TRUE(f.prefixes.empty());
  EXPECT_EQ(f.Check("anything"), V::kMaybe);

  for (const char* opaque : {"(a|b)c", "a|", "\\bword", ".*x", "a|(b)"}) {
    f = RegexPrefilter::Analyse(opaque, false);
    EXPECT_EQ(f.Check("zzz"), V::kMaybe) << opaque;
  }
}

std::vector<std::string> Names() {
  std::vector<std::string> names = {
      "step_execute_model[request_ids:0_1_2]", "execute_model", "ProfilerStep#12", "run_batch",
      "execute_32_context_0(0)_generation_32(32)", "step[EXTEND bs=15 toks=15360]", "step[decode]",
      "aten::mm, seq = 12, op_id = 99", "aten::broadcast_tensors", "aten::all_reduce_hook",
      "c10d::allreduce_", "record_param_comms", "gloo:all_reduce", "ncclAllReduce", "NCCLkernel",
      "nccl", "ncc", "torch.distributed.all_reduce", "tensor_model_parallel_all_reduce",
      "_all_gather_base", "all_to_all_single", "alltoall", "ALL_TO_ALL", "allto_all", "all_toall",
      "reduce_scatter_tensor", "reducescatter", "broadcast_object_list", "Broadcast", "send", "recv",
      "barrier", "sendrecv", "xsend", "send_x", "barrier!", "torch.nn.functional.linear f.py:1",
      "torch.nn.modules.linear.Linear", "torch.optim.adam", "nn.Module: Linear", "torch.cat",
      "Linear.forward", "Model._call_impl", "x.step", "9x.forward", "ns::op", "ns::9op",
      "cudaLaunchKernel", "", "a", "request_ids:", "foo[request_ids:7]", "request_ids:1\\_2_3",
      "parallel_linear", "all", "reduce", "allreduce_coalesced", "all_reduce_base_x", "c10d:",
      "gloo", "recv_tensor", "BARRIER", "Send", "\xff\xfe aten::x", "step_execute_model",
      "\nnccl", "x\naten::mm", "step\n[A",
      // Around the literals the identifier rules need ("::", ".forward", ...): present but
      // not after an identifier, after one, or only partly there.
      "::op", "a::", "a::9", "a b::c", "_C::rotary_embedding, op_id = 269", "vllm::attn", "9a::b",
      ".forward", "a-b.forward", "Linear.forwardx", "Linear.step_fn", "Model._call_impl(x)",
      "Linear.forward(x)", "Linear.backwar", "Nccl_send", "NcclAllReduce", "Aten::mm",
      // Edges of the hand-written identifier matchers: identifier bytes, where "::" and the
      // method stand, what follows them (word bytes, non-ASCII, nothing).
      "_::_", "Z9::z", "a:::b", "a::_x", "a::\xc3\xa9", "a: :b", "a:", "\xc3\xa9::x", "a\xc3\xa9::x", "a-b::c",
      "A.step", "A.steps", "A.step_", "A.step9", "A.step.", "A.step\xc3\xa9", "_._call_impl", "a.._call_impl",
      "a. forward", "a.backward ", "a.backward", "a.Forward", "a.forwar", "a", "a.", "a9_Z.forward",
      "9.forward", "a.b.forward", "a:b::c", "ab::c.forward", "a.forward::b"};
  // Every name also with prefixes and suffixes that may break anchors and word boundaries.
  const std::vector<std::string> base = names;
  for (const std::string& n : base)
    for (const char* a : {"x", " ", "_"}) {
      names.push_back(a + n);
      names.push_back(n + a);
    }
  return names;
}

TEST(RegexPrefilter, DefaultRulesClassifyAsThePlainRegexes) {
  Rules fast = Rules::Defaults();
  Rules slow = Rules::Defaults();
  slow.set_prefilter(false);
  for (const std::string& n : Names())
    for (const char* domain : {"", "PyTorch", "NCCL", "truffld.comm", "x"})
      for (const char* cat : {"", "cpu_op", "gpu_user_annotation", "user_annotation"}) {
        ASSERT_EQ(fast.Classify(n, domain, cat), slow.Classify(n, domain, cat)) << n << " / " << domain << " / " << cat;
      }
  for (const std::string& n : Names()) ASSERT_EQ(fast.ParseRequests(n), slow.ParseRequests(n)) << n;
}

TEST(RegexPrefilter, UserRulesAndRequestRegexAsThePlainRegexes) {
  auto fast = Rules::FromJson(R"J({"rules":[
      {"layer":"comm","name_regex":"^my\\.coll|^other"},
      {"layer":"frontend_op","name_regex":"^Mod(el)?\\.", "ignore_case":true},
      {"layer":"backend_op","name_regex":"kern[0-9]+$"},
      {"layer":"step","name_regex":"^iter\\b"}],
      "request_regex":"reqs=([^;]*)"})J", "test");
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  Rules slow = *fast;
  slow.set_prefilter(false);
  std::vector<std::string> names = Names();
  for (const char* n : {"my.coll", "my_coll", "other", "MODEL.x", "mod.y", "Modelx", "kern12", "kern12x",
                        "iter", "iter_1", "iter 1", "reqs=1_2;x", "a reqs=", "reqs"})
    names.push_back(n);
  for (const std::string& n : names) {
    ASSERT_EQ(fast->Classify(n, "", ""), slow.Classify(n, "", "")) << n;
    ASSERT_EQ(fast->ParseRequests(n), slow.ParseRequests(n)) << n;
  }
}

}  // namespace
}  // namespace truffld::merge
