// Operator catalogue and per-step program of the Qwen3-8B-like stack (see model.h).
#include "truffld/synth/model.h"

#include <algorithm>
#include <cmath>

#include "truffld/synth/record_writer.h"

namespace truffld::synth {
namespace {

// Catalogue ids, in the order the constructor adds them.
enum N : int16_t {
  // backend families (innermost first where nested)
  kAtenTo, kAtenToCopy, kAtenCopy, kAtenZero, kAtenFill, kAtenEmbedding, kAtenIndexSelect,
  kRmsNorm, kFusedAddRmsNorm, kAtenLinear, kAtenMm, kRotary, kReshapeCache, kUnifiedAttn,
  kAtenSilu, kAtenMul, kAtenSoftmax, kAtenSoftmaxImpl, kAtenArgmax,
  // frontends
  kFeEmbedding, kFeLinearQkv, kFeLinearO, kFeLinearGateUp, kFeLinearDown, kFeLinearHead, kFeSilu,
  kFeSoftmax,
  // NCCL
  kNcclAllReduce, kNcclAllGather,
  // kernels
  kKGemmSmall, kKGemmMid, kKGemmLarge, kKGemmHead, kKIndexSelect, kKRmsNorm, kKFusedAddRmsNorm,
  kKRotary, kKReshapeCache, kKFlashPrefill, kKFlashDecode, kKFlashCombine, kKSilu, kKMul,
  kKSoftmax, kKArgmax, kKAllReduceLL, kKAllReduceLL128, kKAllGather, kKFill,
  // pipeline point-to-point (family names as truffld-merge normalises the hooks' ranges; kernel)
  kNcclSend, kNcclRecv, kKSendRecv,
  kNumNames
};

const char* kPy = "/usr/local/lib/python3.12/dist-packages/";

int64_t Ns(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1e9)); }

// Roofline-ish costs for an H100-class GPU, bf16.
constexpr double kFlops = 550e12, kAttnFlops = 380e12, kHbm = 2.6e12, kNvlink = 180e9, kPcie = 14e9;
constexpr double kNet = 25e9;  // inter-host link of pipeline send/recv (200 Gb/s InfiniBand)

int64_t GemmNs(double m, double n, double k) {
  const double t = std::max(2 * m * n * k / kFlops, (n * k + m * k + m * n) * 2 / kHbm);
  return Ns(t) + 3500;
}
int64_t MemNs(double bytes, int64_t fixed) { return Ns(bytes / kHbm) + fixed; }

}  // namespace

const char* KernelClassName(KernelClass c) noexcept {
  static const char* kNames[] = {"gemm",     "attention", "norm",     "elementwise", "rotary",
                                 "kv_cache", "embedding", "sampling", "comm",        "copy"};
  return kNames[static_cast<int>(c)];
}

const char* KernelClassPattern(KernelClass c) noexcept {
  switch (c) {
    case KernelClass::kGemm: return "gemm";
    case KernelClass::kAttention: return "flash_fwd";
    case KernelClass::kNorm: return "rms_norm";
    case KernelClass::kElementwise: return "elementwise_kernel";
    case KernelClass::kComm: return "ncclDevKernel";
    default: return "";
  }
}

Catalogue::Catalogue() {
  const std::string linear = std::string("torch.nn.functional.linear ") + kPy + "vllm/model_executor/layers/linear.py:";
  const char* names[kNumNames] = {};
  names[kAtenTo] = "aten::to"; names[kAtenToCopy] = "aten::_to_copy"; names[kAtenCopy] = "aten::copy_";
  names[kAtenZero] = "aten::zero_"; names[kAtenFill] = "aten::fill_"; names[kAtenEmbedding] = "aten::embedding";
  names[kAtenIndexSelect] = "aten::index_select"; names[kRmsNorm] = "_C::rms_norm";
  names[kFusedAddRmsNorm] = "_C::fused_add_rms_norm"; names[kAtenLinear] = "aten::linear";
  names[kAtenMm] = "aten::mm"; names[kRotary] = "_C::rotary_embedding";
  names[kReshapeCache] = "_C_cache_ops::reshape_and_cache_flash";
  names[kUnifiedAttn] = "vllm::unified_attention_with_output"; names[kAtenSilu] = "aten::silu";
  names[kAtenMul] = "aten::mul"; names[kAtenSoftmax] = "aten::softmax"; names[kAtenSoftmaxImpl] = "aten::_softmax";
  names[kAtenArgmax] = "aten::argmax";
  std::string fe[7] = {
      std::string("torch.nn.functional.embedding ") + kPy + "vllm/model_executor/layers/vocab_parallel_embedding.py:415",
      linear + "530", linear + "1275", linear + "530", linear + "1275",
      std::string("torch.nn.functional.linear ") + kPy + "vllm/model_executor/layers/logits_processor.py:91",
      std::string("torch.nn.functional.silu ") + kPy + "vllm/model_executor/layers/activation.py:84"};
  const std::string softmax = std::string("torch.nn.functional.softmax ") + kPy + "vllm/v1/sample/sampler.py:221";
  names[kNcclAllReduce] = "ncclAllReduce"; names[kNcclAllGather] = "ncclAllGather";
  names[kKGemmSmall] = "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)";
  names[kKGemmMid] = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)";
  names[kKGemmLarge] = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
  names[kKGemmHead] = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x5_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x5_tn_align8::Params)";
  names[kKIndexSelect] = "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)";
  names[kKRmsNorm] = "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)";
  names[kKFusedAddRmsNorm] = "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)";
  names[kKRotary] = "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)";
  names[kKReshapeCache] = "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)";
  names[kKFlashPrefill] = "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(Flash_fwd_params)";
  names[kKFlashDecode] = "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, true, false, false, false, true, true, false, false>(Flash_fwd_params)";
  names[kKFlashCombine] = "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, 6, true>(Flash_fwd_params)";
  names[kKSilu] = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)";
  names[kKMul] = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)";
  names[kKSoftmax] = "void (anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, (anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)";
  names[kKArgmax] = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)";
  names[kKAllReduceLL] = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  names[kKAllReduceLL128] = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL128(ncclDevKernelArgsStorage<4096ul>)";
  names[kKAllGather] = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  names[kKFill] = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<int>, at::detail::Array<char*, 1>)";
  names[kNcclSend] = "nccl:send";
  names[kNcclRecv] = "nccl:recv";
  names[kKSendRecv] = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
  for (int i = 0; i < kNumNames; ++i) {
    std::string s;
    if (i >= kFeEmbedding && i <= kFeSilu) s = fe[i - kFeEmbedding];
    else if (i == kFeSoftmax) s = softmax;
    else s = names[i];
    // Backend ops recorded with a sequence number (the rest print only op_id), as emit_nvtx does.
    const bool seq = i == kAtenLinear || i == kAtenMm || i == kAtenTo || i == kAtenEmbedding ||
                     i == kAtenSoftmax || i == kAtenSilu || i == kAtenMul;
    Add(s, seq);
  }
  Add(kFamHostOutside);
  Add(kFamBetweenSteps);
  Add(kFamCallsUnderStep);
  Add(kFamDeviceIdle);
}

int16_t Catalogue::Add(const std::string& raw, bool has_seq) {
  raw_.push_back(raw);
  escaped_.push_back(JsonEscape(raw));
  has_seq_.push_back(has_seq);
  return static_cast<int16_t>(raw_.size() - 1);
}

int16_t Catalogue::Id(const std::string& raw) const {
  for (size_t i = 0; i < raw_.size(); ++i) {
    if (raw_[i] == raw) return static_cast<int16_t>(i);
  }
  return -1;
}

const std::vector<std::string>& SoftwareTargets() {
  static const std::vector<std::string> kTargets = {
      "aten::mm", "_C::fused_add_rms_norm", "_C::rotary_embedding", "aten::silu", "aten::mul",
      "vllm::unified_attention_with_output", "aten::argmax", "aten::index_select"};
  return kTargets;
}

const std::vector<KernelClass>& KernelFaultClasses() {
  static const std::vector<KernelClass> kClasses = {KernelClass::kGemm, KernelClass::kAttention,
                                                    KernelClass::kNorm, KernelClass::kElementwise};
  return kClasses;
}

namespace {

struct Builder {
  const ModelDims& d;
  std::vector<Op>* ops;
  bool graphable = false;

  Op& New(int16_t fe, std::initializer_list<int16_t> backend, int64_t host_ns) {
    ops->emplace_back();
    Op& op = ops->back();
    op.frontend = fe;
    for (int16_t b : backend) op.backend[op.nbackend++] = b;
    op.host_ns = host_ns;
    op.graphable = graphable;
    return op;
  }
  static Work& AddWork(Op& op, WorkKind kind, KernelClass cls, int16_t name, int64_t ns) {
    Work& w = op.work[op.nwork++];
    w.kind = kind;
    w.cls = cls;
    w.name = name;
    w.nominal_ns = ns;
    return w;
  }
  void Kernel(int16_t fe, std::initializer_list<int16_t> backend, KernelClass cls, int16_t kname,
              int64_t ns, int grid_x, int block_x) {
    Op& op = New(fe, backend, 9000);
    Work& w = AddWork(op, WorkKind::kKernel, cls, kname, ns);
    w.grid = {std::max(1, grid_x), 1, 1};
    w.block = {block_x, 1, 1};
  }
  void Linear(int16_t fe, int64_t m, int64_t n, int64_t k, bool head = false) {
    const int16_t kname = head ? kKGemmHead : m <= 32 ? kKGemmSmall : m <= 512 ? kKGemmMid : kKGemmLarge;
    Op& op = New(fe, {kAtenLinear, kAtenMm}, 14000);
    Work& w = AddWork(op, WorkKind::kKernel, KernelClass::kGemm, kname, GemmNs(double(m), double(n), double(k)));
    w.grid = {static_cast<int>((n + 127) / 128), static_cast<int>((m + 127) / 128), 1};
    w.block = {kname == kKGemmLarge ? 384 : 128, 1, 1};
    w.registers = 168;
    w.shared_memory = kname == kKGemmSmall ? 24576 : 98304;
  }
  void Collective(int16_t comm, int64_t bytes, int64_t ns, int16_t kname) {
    Op& op = New(-1, {}, 6000);
    op.comm = comm;
    Work& w = AddWork(op, WorkKind::kNccl, KernelClass::kComm, kname, ns);
    w.bytes = bytes;
    w.grid = {d.tp > 1 ? 2 : 1, 1, 1};
    w.block = {640, 1, 1};
    w.registers = 96;
  }
  // Pipeline send (dir +1) or recv (dir -1) of one activation tensor across hosts.
  void P2P(int8_t dir, int64_t bytes) {
    Op& op = New(-1, {}, 7000);
    op.comm = dir > 0 ? kNcclSend : kNcclRecv;
    op.p2p = dir;
    Work& w = AddWork(op, WorkKind::kNccl, KernelClass::kComm, kKSendRecv, Ns(bytes / kNet) + 12000);
    w.bytes = bytes;
    w.grid = {1, 1, 1};
    w.block = {640, 1, 1};
    w.registers = 96;
  }
  void AllReduce(int64_t bytes) {
    const double tp = d.tp;
    const int64_t ns = d.tp > 1 ? Ns(bytes * 2.0 * (tp - 1) / tp / kNvlink) + 7000 : 2500;
    Collective(kNcclAllReduce, bytes, ns, bytes <= 256 * 1024 ? kKAllReduceLL : kKAllReduceLL128);
  }
  // Input preparation: blocking copy of the scheduler's token ids, positions, slot mapping reset.
  void InputPrep(const StepShape& s) {
    Op& op = New(-1, {kAtenTo, kAtenToCopy, kAtenCopy}, 12000);
    op.prep = true;
    Work& w = AddWork(op, WorkKind::kMemcpy, KernelClass::kCopy, -1, Ns(s.tokens * 8 / kPcie) + 1800);
    w.copy = kHtoD;
    w.pageable = true;
    w.bytes = s.tokens * 8;
    Op& pos = New(-1, {kAtenCopy}, 7000);
    Work& w2 = AddWork(pos, WorkKind::kMemcpy, KernelClass::kCopy, -1, Ns(s.tokens * 8 / kPcie) + 1500);
    w2.copy = kHtoD;
    w2.bytes = s.tokens * 8;
    Op& z = New(-1, {kAtenZero, kAtenFill}, 6000);
    Work& m = AddWork(z, WorkKind::kMemset, KernelClass::kCopy, -1, 1400);
    m.bytes = s.seqs * 4 * 64;
  }
  // Paged attention over this rank's heads: one flash kernel (prefill) or split-KV decode plus
  // its combine kernel.
  void Attention(const StepShape& s, int64_t kv) {
    const double tp = d.tp;
    Op& op = New(-1, {kUnifiedAttn}, 16000);
    if (s.prefill) {
      const double flops = 2.0 * s.prompt_sq_sum * (d.q_heads / tp) * d.head_dim;
      Work& w = AddWork(op, WorkKind::kKernel, KernelClass::kAttention, kKFlashPrefill, Ns(flops / kAttnFlops) + 6000);
      w.grid = {static_cast<int>((s.tokens + 127) / 128), static_cast<int>(d.q_heads / d.tp), 1};
      w.shared_memory = 49152;
    } else {
      const double bytes = double(s.context_sum) * kv * 4.0;
      Work& w = AddWork(op, WorkKind::kKernel, KernelClass::kAttention, kKFlashDecode, Ns(bytes / kHbm) + 6500);
      w.grid = {4, static_cast<int>(s.seqs), static_cast<int>(d.q_heads / d.tp)};
      w.shared_memory = 32768;
      Work& c = AddWork(op, WorkKind::kKernel, KernelClass::kAttention, kKFlashCombine, 2800);
      c.grid = {static_cast<int>(s.seqs), static_cast<int>(d.q_heads / d.tp), 1};
    }
  }
  // One Qwen3 decoder layer sharded over TP: norm, QKV, q/k norm, rotary, cache write, attention,
  // O projection, all-reduce, norm, gate/up, SiLU x mul, down projection, all-reduce.
  void DecoderLayer(const StepShape& s, int layer) {
    const int64_t hidden_bytes = s.tokens * d.hidden * 2;
    const int64_t q = d.q_heads / d.tp * d.head_dim, kv = std::max(1, d.kv_heads / d.tp) * d.head_dim;
    const int64_t inter = d.intermediate / d.tp;
    const bool first = layer == 0;
    Kernel(-1, {first ? kRmsNorm : kFusedAddRmsNorm}, KernelClass::kNorm, first ? kKRmsNorm : kKFusedAddRmsNorm,
           MemNs(hidden_bytes * (first ? 2.0 : 4.0), 2500), static_cast<int>(s.tokens), 1024);
    Linear(kFeLinearQkv, s.tokens, q + 2 * kv, d.hidden);
    Kernel(-1, {kRmsNorm}, KernelClass::kNorm, kKRmsNorm, MemNs(s.tokens * (q + kv) * 4.0, 2200),
           static_cast<int>(s.tokens * (q + kv) / d.head_dim), 128);
    Kernel(-1, {kRotary}, KernelClass::kRotary, kKRotary, MemNs(s.tokens * (q + kv) * 4.0, 2300),
           static_cast<int>(s.tokens), 256);
    Kernel(-1, {kReshapeCache}, KernelClass::kCache, kKReshapeCache, MemNs(s.tokens * kv * 8.0, 2400),
           static_cast<int>(s.tokens), 256);
    Attention(s, kv);
    Linear(kFeLinearO, s.tokens, d.hidden, q);
    if (d.tp > 1) AllReduce(hidden_bytes);
    Kernel(-1, {kFusedAddRmsNorm}, KernelClass::kNorm, kKFusedAddRmsNorm, MemNs(hidden_bytes * 4.0, 2500),
           static_cast<int>(s.tokens), 1024);
    Linear(kFeLinearGateUp, s.tokens, 2 * inter, d.hidden);
    Kernel(kFeSilu, {kAtenSilu}, KernelClass::kElementwise, kKSilu, MemNs(s.tokens * inter * 4.0, 2000),
           static_cast<int>((s.tokens * inter + 511) / 512), 128);
    Kernel(-1, {kAtenMul}, KernelClass::kElementwise, kKMul, MemNs(s.tokens * inter * 6.0, 2000),
           static_cast<int>((s.tokens * inter + 511) / 512), 128);
    Linear(kFeLinearDown, s.tokens, d.hidden, inter);
    if (d.tp > 1) AllReduce(hidden_bytes);
  }
  // The last stage's tail: final norm, then (eager) the LM head, the logits all-gather across
  // vocabulary shards, sampling, and the blocking copy of the sampled tokens back to the host.
  void SamplingHead(const StepShape& s) {
    const double tp = d.tp;
    const int64_t hidden_bytes = s.tokens * d.hidden * 2;
    Kernel(-1, {kFusedAddRmsNorm}, KernelClass::kNorm, kKFusedAddRmsNorm, MemNs(hidden_bytes * 4.0, 2500),
           static_cast<int>(s.tokens), 1024);
    graphable = false;
    // Logits for the last token of each sequence, gathered across the vocabulary shards.
    Linear(kFeLinearHead, s.seqs, d.vocab / d.tp, d.hidden, /*head=*/true);
    if (d.tp > 1) {
      const int64_t bytes = s.seqs * (d.vocab / d.tp) * 2;
      Collective(kNcclAllGather, bytes, Ns(bytes * (tp - 1) / kNvlink) + 7000, kKAllGather);
    }
    const double logits = double(s.seqs) * d.vocab * 4.0;
    Kernel(kFeSoftmax, {kAtenSoftmax, kAtenSoftmaxImpl}, KernelClass::kSampling, kKSoftmax, MemNs(logits * 2, 3000),
           static_cast<int>(s.seqs), 1024);
    Kernel(-1, {kAtenArgmax}, KernelClass::kSampling, kKArgmax, MemNs(logits, 3000), static_cast<int>(s.seqs), 512);
    Op& out = New(-1, {kAtenTo, kAtenToCopy, kAtenCopy}, 10000);
    Work& w = AddWork(out, WorkKind::kMemcpy, KernelClass::kCopy, -1, Ns(s.seqs * 8 / kPcie) + 1600);
    w.copy = kDtoH;
    w.pageable = true;
    w.bytes = s.seqs * 8;
  }
};

}  // namespace

PipelineStage StageOf(int layers, int index, int count) {
  std::vector<int> sizes(static_cast<size_t>(count), layers / count);
  for (int i = 2; i < layers % count + 2; ++i) ++sizes[static_cast<size_t>(count - i)];
  PipelineStage st;
  st.index = index;
  st.count = count;
  for (int i = 0; i < index; ++i) st.layer_begin += sizes[static_cast<size_t>(i)];
  st.layer_end = st.layer_begin + sizes[static_cast<size_t>(index)];
  return st;
}

void BuildStepProgram(const Catalogue& /*cat*/, const ModelDims& d, const StepShape& s, std::vector<Op>* ops,
                      const PipelineStage& stage) {
  ops->clear();
  Builder b{d, ops};
  const int64_t hidden_bytes = s.tokens * d.hidden * 2;
  // vLLM's worker receives the intermediate tensors (hidden states, residual) before the model
  // runner prepares its inputs.
  if (!stage.first()) {
    b.P2P(-1, hidden_bytes);
    b.P2P(-1, hidden_bytes);
  }
  b.InputPrep(s);
  b.graphable = true;
  if (stage.first()) {
    b.Kernel(kFeEmbedding, {kAtenEmbedding, kAtenIndexSelect}, KernelClass::kEmbedding, kKIndexSelect,
             MemNs(hidden_bytes * 2.0, 3000), static_cast<int>(s.tokens), 128);
    if (d.tp > 1) b.AllReduce(hidden_bytes);
  }
  const int layer_end = stage.layer_end < 0 ? d.layers : stage.layer_end;
  for (int layer = stage.layer_begin; layer < layer_end; ++layer) b.DecoderLayer(s, layer);
  if (!stage.last()) {
    b.graphable = false;
    b.P2P(+1, hidden_bytes);
    b.P2P(+1, hidden_bytes);
    return;
  }
  b.SamplingHead(s);
}

}  // namespace truffld::synth
