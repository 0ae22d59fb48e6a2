// Hand-built StepEvidence for the Stage II tests.
#pragma once

#include <string>
#include <vector>

#include "stage2/evidence.h"

namespace truffld::testing {

inline diagnose::FamilyEvidence Fam(const std::string& name, double probability,
                                    const std::string& parent = "", bool candidate = false) {
  diagnose::FamilyEvidence f;
  f.family = name;
  f.layer = "frontend_op";
  f.parent = parent;
  f.instances = 4;
  f.probability = probability;
  f.score = 1.0 - probability;
  f.min_instance_probability = probability;
  f.candidate = candidate;
  f.method = "gmm";
  f.total_time_ns = 1.5e6;
  f.kernels = {"sm90_xmma_gemm"};
  f.api_calls = {"cudaLaunchKernel"};
  return f;
}

inline diagnose::StepEvidence Step(const std::string& view, std::vector<diagnose::FamilyEvidence> fams,
                                   int64_t index = 0) {
  diagnose::StepEvidence s;
  s.rank = 0;
  s.step_index = index;
  s.step_name = "execute_model";
  if (!ParseView(view, &s.view)) s.view = View::kVertical;  // "": an unknown view reads as vertical
  s.requests = {"req-1", "req-2"};
  s.phase = "decode";
  s.step_duration_ns = 25'000'000;
  s.operator_instances = static_cast<int>(fams.size()) * 4;
  s.families = std::move(fams);
  return s;
}

// A vertical step that the policy calls abnormal: 2 strong of 5 families, one with a parent.
inline diagnose::StepEvidence AbnormalStep(int64_t index = 0) {
  return Step("vertical",
              {Fam("vllm::forward", 0.9), Fam("aten::linear", 1e-9, "vllm::forward", true),
               Fam("aten::mm", 1e-8, "aten::linear", true), Fam("aten::add", 0.8, "vllm::forward"),
               Fam("aten::silu", 0.7, "vllm::forward")},
              index);
}

}  // namespace truffld::testing
