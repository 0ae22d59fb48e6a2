// Microbenchmark (label bench) of the writer's formatting of the commonest NVTX records: one
// nvtxRangePushA("aten::mm, op_id = 42") / nvtxRangePop pair of one thread, as the JSONL lines
// of truffld.events/1, into a buffer that is cleared (never reallocated) every 4096 pairs.
// BM_FormatPlainPair/0 formats every line's end (process and thread id) afresh, /1 keeps it in a
// LineTail (FormatRecord into a std::string); BM_FormatPlainPairInPlace writes the lines with
// FormatPlainNvtxTo straight into a byte buffer, as the writer does (format.h). The writer's
// share of "Injector: CPU per NVTX push+pop pair" in BENCHMARKS.md; no file, no ring, no thread.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "format.h"
#include "nvtx_registry.h"

namespace {

using truffld::inject::FormatPlainNvtxTo;
using truffld::inject::FormatRecord;
using truffld::inject::LineTail;
using truffld::inject::NvtxRegistry;
using truffld::inject::Record;
using truffld::inject::RecordKind;

// The pair both benchmarks format: a push named like a PyTorch operator and its pop.
struct PlainPair {
  std::string name = "aten::mm, op_id = 42";
  Record push{}, pop{};
  PlainPair() {
    push.kind = RecordKind::kNvtxPush;
    push.tid = 123456;
    push.name_len = static_cast<uint16_t>(name.size());
    pop.kind = RecordKind::kNvtxPop;
    pop.tid = 123456;
  }
};

void BM_FormatPlainPair(benchmark::State& state) {
  const bool keep_tail = state.range(0) != 0;
  NvtxRegistry reg;
  PlainPair pair;
  const std::string& name = pair.name;
  Record &push = pair.push, &pop = pair.pop;
  std::string out;
  out.reserve(4096 * 256);
  LineTail tail;
  int64_t t = 12000000000000;  // ns since boot, 14 digits (monotonic_raw, the default clock)
  int in_buffer = 0;
  for (auto _ : state) {
    if (++in_buffer == 4096) {
      out.clear();
      in_buffer = 0;
    }
    push.t0 = t += 137;
    pop.t0 = t += 91;
    FormatRecord(push, name, 4242424, reg, out, keep_tail ? &tail : nullptr);
    FormatRecord(pop, {}, 4242424, reg, out, keep_tail ? &tail : nullptr);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FormatPlainPair)->Arg(0)->Arg(1);

void BM_FormatPlainPairInPlace(benchmark::State& state) {
  PlainPair pair;
  const std::string& name = pair.name;
  Record &push = pair.push, &pop = pair.pop;
  std::vector<char> buf(4096 * 256 + 2 * truffld::inject::kPlainNvtxLineMax);
  char* p = buf.data();
  LineTail tail;
  int64_t t = 12000000000000;
  int in_buffer = 0;
  for (auto _ : state) {
    if (++in_buffer == 4096) {
      p = buf.data();
      in_buffer = 0;
    }
    push.t0 = t += 137;
    pop.t0 = t += 91;
    p = FormatPlainNvtxTo(p, push, name, 4242424, tail);
    p = FormatPlainNvtxTo(p, pop, {}, 4242424, tail);
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FormatPlainPairInPlace);

}  // namespace

BENCHMARK_MAIN();
