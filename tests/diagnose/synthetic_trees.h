// Hand-built trees.jsonl for diagnose tests: a small decoder-like workload with known faults.
//
// Each step has `requests` request trees that share the same operators (so the reader's
// per-step deduplication is exercised). Vertical view: per layer, linear -> aten::mm -> launch ->
// gemm kernel, aten::add, softmax -> aten::softmax, aten::copy_ -> memcpy. Horizontal view: one
// ncclAllReduce and ncclAllGather per layer, anchored on
// aten::mm and aten::copy_. Prefill steps (every 4th) are 4x longer than
// decode steps, so normal behaviour is bimodal. Faults multiply a family's durations in one
// step, for a fraction of its instances (fraction 1.0 = the whole step uniformly slow).
// Durations jitter log-normally (sigma 5%). Deterministic for a given seed.
// Thread-safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace truffld::diagnose::testing {

struct SynthFault {
  int rank = 0;
  int step = 0;
  std::string family;       // e.g. "aten::mm", "ncclAllReduce"
  double factor = 3.0;      // duration multiplier
  double fraction = 1.0;    // share of the family's instances in the step that are slow
};

struct SynthSpec {
  int ranks = 1, steps = 24, layers = 12, requests = 2;
  uint64_t seed = 1;
  std::vector<SynthFault> faults;
};

struct SynthOutput {
  std::string trees;   // trees.jsonl content
  std::string labels;  // labels.jsonl content (one line per faulty (rank, step, view))
};

inline SynthOutput MakeSyntheticTrees(const SynthSpec& spec) {
  using nlohmann::json;
  std::mt19937_64 rng(spec.seed);
  std::normal_distribution<double> jitter(0.0, 0.05);
  SynthOutput out;
  for (int rank = 0; rank < spec.ranks; ++rank) {
    int64_t t = 1'000'000'000;
    for (int s = 0; s < spec.steps; ++s) {
      const bool prefill = s % 4 == 0;
      const double scale = prefill ? 4.0 : 1.0;
      auto factor = [&](const std::string& fam, int layer, int layers) {
        for (const auto& f : spec.faults) {
          if (f.rank == rank && f.step == s && f.family == fam &&
              layer < static_cast<int>(std::ceil(f.fraction * layers))) {
            return f.factor;
          }
        }
        return 1.0;
      };
      auto dur = [&](double base) {
        return static_cast<int64_t>(base * scale * std::exp(jitter(rng)));
      };
      const int64_t step_start = t;
      json vchildren = json::array(), hchildren = json::array();
      int64_t tid = 4242;
      for (int l = 0; l < spec.layers; ++l) {
        // linear -> aten::mm -> cudaLaunchKernel -> gemm kernel
        int64_t mm_k = static_cast<int64_t>(dur(40'000) * factor("aten::mm", l, spec.layers));
        int64_t launch = dur(5'000);
        int64_t mm_start = t + 2'000, k_start = mm_start + 1'000 + 3'000;
        int64_t mm_end = std::max(mm_start + 1'000 + launch, k_start + mm_k) + 1'000;
        json kernel = {{"name", "void sm90_gemm<float>(Params)"}, {"layer", "kernel"}, {"family", "sm90_gemm"},
                       {"start", k_start}, {"end", k_start + mm_k}, {"stream", 7}, {"correlation_id", l * 10 + 1}};
        json call = {{"name", "cudaLaunchKernel"}, {"layer", "runtime_call"}, {"family", "cudaLaunchKernel"},
                     {"start", mm_start + 1'000}, {"end", mm_start + 1'000 + launch}, {"thread_id", tid},
                     {"correlation_id", l * 10 + 1}, {"children", json::array({kernel})}};
        json mm = {{"name", "aten::mm, seq = " + std::to_string(l)}, {"layer", "backend_op"}, {"family", "aten::mm"},
                   {"start", mm_start}, {"end", mm_end}, {"thread_id", tid}, {"children", json::array({call})}};
        json linear = {{"name", "torch.nn.functional.linear /m.py:12"}, {"layer", "frontend_op"},
                       {"family", "torch.nn.functional.linear"}, {"start", t}, {"end", mm_end + 1'000},
                       {"thread_id", tid}, {"children", json::array({mm})}};
        vchildren.push_back(linear);
        t = mm_end + 2'000;
        // aten::add
        int64_t add_d = static_cast<int64_t>(dur(12'000) * factor("aten::add", l, spec.layers));
        vchildren.push_back({{"name", "aten::add"}, {"layer", "backend_op"}, {"family", "aten::add"},
                             {"start", t}, {"end", t + add_d}, {"thread_id", tid},
                             {"children", json::array({{{"name", "cudaLaunchKernel"}, {"layer", "runtime_call"},
                                                        {"family", "cudaLaunchKernel"}, {"start", t + 500},
                                                        {"end", t + 500 + dur(3'000)}, {"thread_id", tid}}})}});
        t += add_d + 1'000;
        // softmax
        int64_t sm_d = static_cast<int64_t>(dur(15'000) * factor("aten::softmax", l, spec.layers));
        json asm_ = {{"name", "aten::softmax"}, {"layer", "backend_op"}, {"family", "aten::softmax"},
                     {"start", t + 500}, {"end", t + 500 + sm_d}, {"thread_id", tid}};
        vchildren.push_back({{"name", "torch.nn.functional.softmax /m.py:40"}, {"layer", "frontend_op"},
                             {"family", "torch.nn.functional.softmax"}, {"start", t},
                             {"end", t + sm_d + 1'000}, {"thread_id", tid}, {"children", json::array({asm_})}});
        t += sm_d + 2'000;
        // aten::copy_ with a memcpy
        int64_t cp_d = static_cast<int64_t>(dur(8'000) * factor("aten::copy_", l, spec.layers));
        json memcpy = {{"name", "Memcpy HtoD"}, {"layer", "memcpy"}, {"family", "Memcpy HtoD"},
                       {"start", t + 2'000}, {"end", t + 2'000 + cp_d / 2}, {"bytes", 1 << 20}};
        json mcall = {{"name", "cudaMemcpyAsync"}, {"layer", "runtime_call"}, {"family", "cudaMemcpyAsync"},
                      {"start", t + 500}, {"end", t + 1'500}, {"thread_id", tid}, {"children", json::array({memcpy})}};
        vchildren.push_back({{"name", "aten::copy_"}, {"layer", "backend_op"}, {"family", "aten::copy_"},
                             {"start", t}, {"end", t + cp_d}, {"thread_id", tid}, {"children", json::array({mcall})}});
        t += cp_d + 1'000;
        // horizontal: an all-reduce after the matmul and an all-gather after the copy
        for (const char* comm : {"ncclAllReduce", "ncclAllGather"}) {
          bool ar = std::string(comm) == "ncclAllReduce";
          int64_t c_d = static_cast<int64_t>(dur(ar ? 30'000 : 20'000) * factor(comm, l, spec.layers));
          hchildren.push_back({{"name", comm}, {"layer", "comm"}, {"family", comm},
                               {"start", t}, {"end", t + c_d}, {"thread_id", tid},
                               {"payload", {{"bytes", ar ? 8 << 20 : 2 << 20}, {"world_size", 2}}},
                               {"anchor", {{"name", ar ? "aten::mm" : "aten::copy_"}, {"layer", "backend_op"},
                                           {"family", ar ? "aten::mm" : "aten::copy_"}}}});
          t += c_d + 1'000;
        }
      }
      const int64_t step_end = t;
      std::vector<std::string> reqs;
      for (int r = 0; r < spec.requests; ++r) reqs.push_back("req-" + std::to_string(s * 10 + r));
      for (const char* view : {"vertical", "horizontal"}) {
        bool h = std::string(view) == "horizontal";
        for (const auto& req : reqs) {
          json tree = {{"schema", "truffld.trees/1"}, {"rank", rank}, {"process_id", 100 + rank},
                       {"step_index", s}, {"step", "step " + std::to_string(s)}, {"requests", reqs},
                       {"request", req}, {"view", view}, {"phase", prefill ? "prefill" : "decode"},
                       {"start", step_start}, {"end", step_end},
                       {"root", {{"name", "step " + std::to_string(s)}, {"layer", "step"}, {"family", "step"},
                                 {"start", step_start}, {"end", step_end},
                                 {"children", h ? hchildren : vchildren}}}};
          out.trees += tree.dump() + "\n";
        }
        std::vector<std::string> faulty;
        for (const auto& f : spec.faults) {
          bool comm = f.family.rfind("nccl", 0) == 0;
          if (f.rank == rank && f.step == s && comm == h) faulty.push_back(f.family);
        }
        if (!faulty.empty()) {
          out.labels += json{{"rank", rank}, {"step_index", s}, {"view", view}, {"abnormal", true},
                             {"faulty", faulty}}.dump() + "\n";
        }
      }
      t += 50'000;
    }
  }
  return out;
}

}  // namespace truffld::diagnose::testing
