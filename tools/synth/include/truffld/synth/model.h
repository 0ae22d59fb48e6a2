// The Qwen3-8B-like serving stack as a list of operators per engine step.
//
// BuildStepProgram turns a step's shape (prefill or decode, tokens, sequences, context) into the
// ordered operators a vLLM worker runs: input preparation, embedding, N decoder layers (RMSNorm,
// QKV projection, q/k norm, rotary embedding, KV-cache write, attention, output projection,
// all-reduce, RMSNorm, gate/up projection, SiLU, multiply, down projection, all-reduce), final
// norm, LM head with the logits all-gather, and sampling. Each operator carries its frontend
// range (torch.nn.functional.* with a call site), its backend range chain (aten::/_C:: names,
// outer to inner), or its NCCL range, and at most two pieces of device work with a nominal
// duration from a simple roofline cost model of an H100-class GPU (so durations scale with
// tokens, batch and context, which makes normal behaviour multi-modal). Names are kept JSON-
// escaped in a Catalogue so the writer can copy them directly. With pipeline parallelism each
// stage runs a slice of the layers (PipelineStage): stages after the first start by receiving the
// activations (hidden states, residual) from the previous stage, stages before the last end by
// sending them on; those point-to-point ops are named as truffld's hooks name vLLM's
// PyNcclCommunicator.send/recv (`nccl:send, bytes=B, world_size=PP, impl=pynccl`).
// Thread-safety: a Catalogue is immutable after construction; programs are plain data.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace truffld::synth {

enum class WorkKind : uint8_t { kKernel, kMemcpy, kMemset, kNccl };
enum class KernelClass : uint8_t {
  kGemm, kAttention, kNorm, kElementwise, kRotary, kCache, kEmbedding, kSampling, kComm, kCopy
};
const char* KernelClassName(KernelClass c) noexcept;  // "gemm", "attention", ...
// Substring a kernel name of the class contains (how a reader recognises the class), or "".
const char* KernelClassPattern(KernelClass c) noexcept;

enum CopyKind : uint8_t { kHtoD = 0, kDtoH = 1, kDtoD = 2 };

struct Work {
  WorkKind kind = WorkKind::kKernel;
  KernelClass cls = KernelClass::kGemm;
  uint8_t stream = 0;        // 0 = compute stream, 1 = auxiliary copy stream
  uint8_t copy = kHtoD;      // memcpy direction
  bool pageable = false;     // a pageable memcpy blocks its host call until the copy is done
  int16_t name = -1;         // kernel name id in the Catalogue
  int64_t nominal_ns = 0;    // device time before jitter and faults
  int64_t bytes = 0;         // memcpy/memset size; NCCL message size
  std::array<int, 3> grid{1, 1, 1};
  std::array<int, 3> block{128, 1, 1};
  int registers = 32;
  int shared_memory = 0;
};

struct Op {
  int16_t frontend = -1;                 // frontend range name id (with call site), or -1
  std::array<int16_t, 3> backend{-1, -1, -1};  // backend range family ids, outer -> inner
  uint8_t nbackend = 0;
  int16_t comm = -1;                     // NCCL range name id (ncclAllReduce, nccl:send, ...), or -1
  int8_t p2p = 0;                        // pipeline: +1 send to the next stage, -1 recv from the previous
  uint8_t nwork = 0;
  std::array<Work, 2> work;
  int64_t host_ns = 0;                   // framework overhead on the host
  bool prep = false;                     // the step's input-preparation copy (engine delay site)
  bool graphable = false;                // part of the model body captured into decode graphs
  // Label family: the NCCL name for comm ops, else the innermost backend family.
  int16_t family() const { return comm >= 0 ? comm : backend[nbackend - 1]; }
  bool horizontal() const { return comm >= 0; }
};

struct StepShape {
  bool prefill = false;
  int64_t tokens = 1;        // tokens processed this step
  int64_t seqs = 1;          // sequences in the batch (decode: padded to the graph bucket)
  int64_t context_sum = 0;   // sum of context lengths (decode attention reads)
  int64_t prompt_sq_sum = 0; // sum of squared prompt lengths (prefill attention work)
};

struct ModelDims {
  int layers = 36;
  int tp = 1;
  int hidden = 4096;
  int intermediate = 12288;
  int q_heads = 32;
  int kv_heads = 8;
  int head_dim = 128;
  int vocab = 151936;
};

// The diagnoser's pseudo-families for a step's time that no operator range covers (labels use
// them verbatim): host time between operators, the wait before the step, and CUDA API calls issued
// directly under the step range with their device work.
inline constexpr const char* kFamHostOutside = "(host outside operators)";
inline constexpr const char* kFamBetweenSteps = "(between steps)";
inline constexpr const char* kFamCallsUnderStep = "(calls under the step)";
inline constexpr const char* kFamDeviceIdle = "(device idle)";  // the GPU ran nothing inside the step

// Interned, JSON-escaped names: backend families, frontend names with call sites, NCCL names,
// kernel names. Ids are stable for a given construction.
class Catalogue {
 public:
  Catalogue();
  const std::string& Escaped(int16_t id) const { return escaped_[id]; }
  const std::string& Raw(int16_t id) const { return raw_[id]; }
  bool HasSeq(int16_t id) const { return has_seq_[id]; }  // backend names carry ", seq = 0"
  int16_t Id(const std::string& raw) const;               // -1 if absent
  size_t size() const { return raw_.size(); }

  // Ids used by the program builder.
  int16_t Add(const std::string& raw, bool has_seq = false);

 private:
  std::vector<std::string> raw_, escaped_;
  std::vector<bool> has_seq_;
};

// The slice of the model one pipeline stage runs: decoder layers [layer_begin, layer_end), the
// embedding on the first stage, final norm, LM head and sampler on the last.
struct PipelineStage {
  int index = 0, count = 1;
  int layer_begin = 0, layer_end = -1;  // -1 = every layer
  bool first() const { return index == 0; }
  bool last() const { return index == count - 1; }
};
// vLLM's split (get_pp_indices): layers / count each, the remainder going one by one to the
// stages before the last, from the second-to-last backwards.
PipelineStage StageOf(int layers, int index, int count);

// Fills `ops` (cleared first) with the step's operators in execution order, for one stage.
void BuildStepProgram(const Catalogue& cat, const ModelDims& dims, const StepShape& shape,
                      std::vector<Op>* ops, const PipelineStage& stage = PipelineStage{});

// The innermost backend families a software fault may target, and the kernel classes a CUDA
// fault may target (both as catalogue strings / class values).
const std::vector<std::string>& SoftwareTargets();
const std::vector<KernelClass>& KernelFaultClasses();

}  // namespace truffld::synth
