// Backend context of one step for Stage II's summary J_s: which kernel libraries and custom-op
// backends the step's operators use (inferred from kernel and operator names by a fixed table),
// the NVTX domains seen in the trace, and whether the step replays a CUDA graph.
//
// The tags are our own short words ("cublas", "flash-attn", "nccl", ...), never copied text;
// NVTX domains are trace text and are sanitised like every other name. Everything is derived
// from data and sorted, so the same step always gives the same context (and the same cache key).
// Pure: no I/O. Thread-safety: reentrant functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stage2/evidence.h"

namespace truffld::diagnose {

inline constexpr size_t kMaxPromptDomains = 8;       // NVTX domains shown per step
inline constexpr size_t kMaxPromptDomainBytes = 64;  // each shortened to this

// The library tag of one kernel or operator name ("" when none applies). First match wins:
// nccl, custom-allreduce, flashinfer, flash-attn, paged-attention, triton, cublas, cutlass,
// cudnn, vllm-custom-op (vllm::, _C::, _C_cache_ops::, _moe_C::), sgl-kernel, attention, gemm,
// elementwise, reduction, aten-native. Case-insensitive substring rules.
std::string BackendTag(const std::string& name);

// Sorted, distinct tags of the names (empty tags skipped).
std::vector<std::string> BackendTags(const std::vector<std::string>& names);

// Tags of one family: its own name and its kernels.
std::vector<std::string> FamilyBackendTags(const FamilyEvidence& f);

// J_s's "backends" object: {"kernel_libraries": [tags over all families' names and kernels],
// "nvtx_domains": [...] (when any), "cuda_graph": "graph" | "eager" (when known: the reader's
// regime, else "graph" when some family calls cudaGraphLaunch/cuGraphLaunch)}.
nlohmann::json BackendContext(const StepEvidence& step);

}  // namespace truffld::diagnose
