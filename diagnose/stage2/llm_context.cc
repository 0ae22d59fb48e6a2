// Backend tags and step context for J_s (see llm_context.h).
#include "stage2/llm_context.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "read/graph_replay.h"
#include "stage2/llm_prompt.h"

namespace truffld::diagnose {
namespace {

// Ordered rules: the first whose pattern occurs in the lower-cased name gives the tag.
struct TagRule {
  const char* tag;
  std::vector<const char*> patterns;
};

const std::vector<TagRule>& Rules() {
  static const std::vector<TagRule> kRules = {
      {"nccl", {"nccl"}},
      {"custom-allreduce", {"cross_device_reduce", "custom_all_reduce", "custom_ar"}},
      {"flashinfer", {"flashinfer"}},
      {"flash-attn", {"flash_fwd", "flash_bwd", "flash::", "flash_attn", "fmha"}},
      {"paged-attention", {"paged_attention"}},
      {"triton", {"triton"}},
      {"cublas", {"cublas", "xmma", "gemv"}},
      {"cutlass", {"cutlass"}},
      {"cudnn", {"cudnn"}},
      {"vllm-custom-op", {"vllm::", "_c::", "_c_cache_ops::", "_moe_c::"}},
      {"sgl-kernel", {"sgl_kernel", "sgl::"}},
      {"attention", {"attention", "attn"}},
      {"gemm", {"gemm", "matmul"}},
      {"elementwise", {"elementwise"}},
      {"reduction", {"reduce_kernel"}},
      {"aten-native", {"at::native", "cunn_"}},
  };
  return kRules;
}

}  // namespace

std::string BackendTag(const std::string& name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const TagRule& r : Rules()) {
    for (const char* p : r.patterns) {
      if (lower.find(p) != std::string::npos) return r.tag;
    }
  }
  return {};
}

std::vector<std::string> BackendTags(const std::vector<std::string>& names) {
  std::set<std::string> tags;
  for (const std::string& n : names) {
    if (std::string t = BackendTag(n); !t.empty()) tags.insert(std::move(t));
  }
  return {tags.begin(), tags.end()};
}

std::vector<std::string> FamilyBackendTags(const FamilyEvidence& f) {
  std::vector<std::string> names = f.kernels;
  names.push_back(f.family);
  return BackendTags(names);
}

nlohmann::json BackendContext(const StepEvidence& step) {
  std::vector<std::string> names;
  bool graph_launch = false;
  for (const FamilyEvidence& f : step.families) {
    names.push_back(f.family);
    names.insert(names.end(), f.kernels.begin(), f.kernels.end());
    graph_launch = graph_launch || std::any_of(f.api_calls.begin(), f.api_calls.end(),
                                                   [](const std::string& a) { return detail::IsGraphLaunchName(a); });
  }
  nlohmann::json out = nlohmann::json::object();
  out["kernel_libraries"] = BackendTags(names);
  std::set<std::string> domains;  // sanitised, distinct, sorted
  for (const std::string& d : step.nvtx_domains) {
    domains.insert(SanitizeForPrompt(d, kMaxPromptDomainBytes));
  }
  if (!domains.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const std::string& d : domains) {
      if (list.size() == kMaxPromptDomains) break;
      list.push_back(d);
    }
    out["nvtx_domains"] = std::move(list);
  }
  if (step.regime) {
    out["cuda_graph"] = RegimeName(*step.regime);
  } else if (graph_launch) {
    out["cuda_graph"] = "graph";
  }
  return out;
}

}  // namespace truffld::diagnose
