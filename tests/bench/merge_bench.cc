// merge_bench: end-to-end speed and memory of the merge stage on a generated truffld dump.
//
//   merge_bench gen  --events N --out FILE [--ranks R]   write a realistic raw dump (one file)
//   merge_bench run  FILE... [--no-trace] [--passes N]    import + merge + write, timed per phase
//   merge_bench touch [--mb N]                            what first touches of memory cost here
//
// The generated mix follows what the injector writes for a vLLM-like engine: steps named
// step_execute_model[request_ids:...], frontend ranges around backend (aten::) ranges, one
// runtime call and one kernel per backend op, a collective per layer, memsets now and then.
// `run` prints events/s, MB/s and per-phase seconds; peak memory is read from the OS
// (VmHWM), so numbers here do not depend on /usr/bin/time being installed.
// Not a unit test: ctest label `bench`, excluded from CI.
#include <time.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "truffld/merge/import.h"
#include "truffld/merge/pipeline.h"
#include "truffld/merge/writers.h"

using namespace truffld::merge;

namespace {

// Process CPU seconds: on a shared, loaded machine wall time overstates the cost; CPU time is
// what one core would need.
double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// User-mode CPU seconds of the process. On virtual machines the kernel's share (first touch
// of fresh memory, page-cache writes) varies a lot from run to run; user time does not.
double UserSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec) + ru.ru_utime.tv_usec * 1e-6;
}

long PeakRssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

int Gen(long long target, const std::string& out, int ranks) {
  std::FILE* f = std::fopen(out.c_str(), "wb");
  if (!f) { std::perror(out.c_str()); return 1; }
  const long long pid = 4242, tid = 4243;
  long long t = 1763700000000000000LL, corr = 1, events = 0;
  std::fprintf(f, "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"bench\",\"process_id\":%lld,\"rank\":%d,"
                  "\"clock\":\"realtime\",\"clock_sync\":{\"realtime_ns\":%lld,\"monotonic_ns\":1000}}\n", pid, ranks - 1, t);
  auto push = [&](const char* name) {
    std::fprintf(f, "{\"type\":\"NVTX_PUSH\",\"name\":\"%s\",\"timestamp\":%lld,\"process_id\":%lld,\"thread_id\":%lld,\"domain\":\"truffld\"}\n",
                 name, t, pid, tid);
    t += 700; ++events;
  };
  auto pop = [&] {
    std::fprintf(f, "{\"type\":\"NVTX_POP\",\"timestamp\":%lld,\"process_id\":%lld,\"thread_id\":%lld}\n", t, pid, tid);
    t += 300; ++events;
  };
  auto launch = [&](const char* kernel, bool memset) {
    std::fprintf(f, "{\"type\":\"RUNTIME\",\"cbid\":211,\"name\":\"cudaLaunchKernel\",\"start\":%lld,\"end\":%lld,"
                    "\"correlation_id\":%lld,\"process_id\":%lld,\"thread_id\":%lld,\"return_code\":0}\n",
                 t, t + 2500, corr, pid, tid);
    if (memset)
      std::fprintf(f, "{\"type\":\"MEMSET\",\"bytes\":4096,\"gpu_start\":%lld,\"gpu_end\":%lld,\"correlation_id\":%lld,\"device\":0,\"stream\":7}\n",
                   t + 4000, t + 5000, corr);
    else
      std::fprintf(f, "{\"type\":\"KERNEL\",\"name\":\"%s\",\"gpu_start\":%lld,\"gpu_end\":%lld,\"correlation_id\":%lld,"
                      "\"device\":0,\"stream\":7,\"grid\":[128,1,1],\"block\":[256,1,1],\"registers\":32}\n",
                   kernel, t + 4000, t + 9000, corr);
    t += 3000; ++corr; events += 2;
  };
  long long step = 0;
  while (events < target) {
    char name[96];
    std::snprintf(name, sizeof name, "step_execute_model[request_ids:%lld_%lld_%lld]", step * 3, step * 3 + 1, step * 3 + 2);
    push(name);
    for (int layer = 0; layer < 32 && events < target; ++layer) {
      push("torch.nn.functional.linear /usr/lib/python3/site-packages/vllm/model_executor/layers/linear.py:123");
      push("aten::linear, seq = 0, op_id = 1234");
      push("aten::mm, seq = 0, op_id = 1235");
      launch("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)", false);
      pop();
      push("aten::add_, op_id = 1236");
      launch("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)", layer % 8 == 0);
      pop();
      pop();
      pop();
      push("ncclAllReduce");
      launch("ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", false);
      pop();
    }
    pop();
    ++step;
  }
  std::fprintf(f, "{\"type\":\"STATS\",\"records_written\":%lld,\"records_dropped\":0}\n", events);
  std::fclose(f);
  std::printf("wrote %lld events (%lld steps) to %s\n", events, step, out.c_str());
  return 0;
}

int Run(const std::vector<std::string>& paths, bool trace) {
  using clk = std::chrono::steady_clock;
  auto secs = [](clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  auto t0 = clk::now();
  double c0 = CpuSeconds();
  double u0 = UserSeconds();
  auto imported = ImportAll(paths, ImportOptions{}, 2);
  std::vector<TraceFile> files;
  uint64_t bytes = 0, events = 0;
  for (size_t i = 0; i < imported.size(); ++i) {
    if (!imported[i].ok()) { std::fprintf(stderr, "%s\n", imported[i].status().ToString().c_str()); return 1; }
    events += imported[i]->events.size() + imported[i]->folded_pops;
    std::ifstream in(paths[i], std::ios::binary | std::ios::ate);
    bytes += uint64_t(in.tellg());
    files.push_back(std::move(imported[i].value()));
  }
  auto t1 = clk::now();
  double c1 = CpuSeconds();
  double u1 = UserSeconds();
  const long rss_import = PeakRssKb();
  auto merged = Merge(std::move(files), MergeOptions{});
  if (!merged.ok()) { std::fprintf(stderr, "%s\n", merged.status().ToString().c_str()); return 1; }
  auto t2 = clk::now();
  double c2 = CpuSeconds();
  double u2 = UserSeconds();
  const long rss_merge = PeakRssKb();
  std::FILE* devnull = std::fopen("/dev/null", "wb");
  JsonOut trees(devnull, "/dev/null");
  uint64_t lines = WriteTreesJsonl(*merged, &trees, TreeLayout::kGrouped);  // as the CLI
  (void)trees.Flush();
  auto t3 = clk::now();
  double c3 = CpuSeconds();
  double u3 = UserSeconds();
  const long rss_trees = PeakRssKb();
  if (trace) {
    JsonOut tr(devnull, "/dev/null");
    WriteChromeTrace(*merged, &tr);
    (void)tr.Flush();
  }
  auto t4 = clk::now();
  double c4 = CpuSeconds();
  double u4 = UserSeconds();
  std::fclose(devnull);
  double total = secs(t0, t4);
  long rss = PeakRssKb();
  std::printf("events %llu, input %.1f MB, trees %llu\n", (unsigned long long)events, bytes / 1e6, (unsigned long long)lines);
  std::printf("import %.3f s, merge %.3f s, trees.jsonl %.3f s, trace.json %.3f s, total %.3f s\n",
              secs(t0, t1), secs(t1, t2), secs(t2, t3), secs(t3, t4), total);
  std::printf("cpu: import %.3f s, merge %.3f s, trees.jsonl %.3f s, trace.json %.3f s, total %.3f s\n",
              c1 - c0, c2 - c1, c3 - c2, c4 - c3, c4 - c0);
  std::printf("user cpu: import %.3f s, merge %.3f s, trees.jsonl %.3f s, trace.json %.3f s, total %.3f s "
              "(%.2f M events per user CPU second; the rest is kernel time)\n",
              u1 - u0, u2 - u1, u3 - u2, u4 - u3, u4 - u0, events / (u4 - u0) / 1e6);
  std::printf("per CPU second: %.2f M events/s, %.1f MB/s\n", events / (c4 - c0) / 1e6, bytes / (c4 - c0) / 1e6);
  std::printf("wall throughput %.2f M events/s, %.1f MB/s; peak RSS %.1f MB = %.0f bytes/event\n",
              events / total / 1e6, bytes / total / 1e6, rss / 1024.0, rss * 1024.0 / double(events ? events : 1));
  auto per = [&](long kb) { return kb * 1024.0 / double(events ? events : 1); };
  std::printf("peak RSS reached by the end of: import %.0f, merge %.0f, trees.jsonl %.0f, trace.json %.0f bytes/event\n",
              per(rss_import), per(rss_merge), per(rss_trees), per(rss));
  return 0;
}

// Seconds to write one byte into every 4 KiB of a fresh anonymous mapping of `bytes` (huge
// pages asked for, as the merge's allocations get them), or -1 when the mapping fails.
double FirstTouchSeconds(size_t bytes) {
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return -1;
#ifdef MADV_HUGEPAGE
  (void)madvise(m, bytes, MADV_HUGEPAGE);
#endif
  volatile char* p = static_cast<volatile char*>(m);
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  munmap(m, bytes);
  return s;
}

// The kernel's share of the merge's time is mostly first touches of fresh memory. On bare metal
// that is clearing pages (~0.1 s per GB); a virtual machine whose host backs guest memory lazily,
// and takes freed memory back (free page reporting), adds the host's work to every touch of
// memory the guest has not used lately. This measures both cases: memory the OS has not handed
// out lately (first and after an idle pause), and memory just freed by this process.
int Touch(size_t mb) {
  const size_t bytes = mb << 20;
  const double gb = double(bytes) / 1e9;
  auto show = [&](const char* what, double s) {
    if (s < 0) std::printf("%-44s mmap failed\n", what);
    else std::printf("%-44s %.3f s  (%.2f s per GB)\n", what, s, s / gb);
  };
  std::printf("first touch of %zu MB, huge pages asked for:\n", mb);
  show("  fresh (start of the run)", FirstTouchSeconds(bytes));
  show("  again at once (memory just freed)", FirstTouchSeconds(bytes));
  show("  again at once", FirstTouchSeconds(bytes));
  sleep(5);
  show("  again after 5 s idle", FirstTouchSeconds(bytes));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("usage: merge_bench gen --events N --out FILE [--ranks R]\n"
                "       merge_bench run FILE... [--no-trace] [--passes N]\n"
                "       merge_bench touch [--mb N]   (default 1024)\n");
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "gen") {
    long long n = 1000000;
    std::string out = "bench.jsonl";
    int ranks = 1;
    for (size_t i = 1; i + 1 < args.size(); i += 2) {
      if (args[i] == "--events") n = std::atoll(args[i + 1].c_str());
      else if (args[i] == "--out") out = args[i + 1];
      else if (args[i] == "--ranks") ranks = std::atoi(args[i + 1].c_str());
    }
    return Gen(n, out, ranks);
  }
  if (args[0] == "run") {
    std::vector<std::string> paths;
    bool trace = true;
    int passes = 1;
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i] == "--no-trace") trace = false;
      else if (args[i] == "--passes" && i + 1 < args.size()) passes = std::atoi(args[++i].c_str());
      else paths.push_back(args[i]);
    }
    if (passes < 1 || passes > 100) { std::fprintf(stderr, "--passes: 1 to 100\n"); return 2; }
    for (int p = 1; p <= passes; ++p) {
      if (passes > 1) std::printf("--- pass %d of %d%s\n", p, passes, p > 1 ? " (memory freed by the last pass is reused)" : "");
      if (int rc = Run(paths, trace)) return rc;
    }
    return 0;
  }
  if (args[0] == "touch") {
    long long mb = 1024;
    for (size_t i = 1; i + 1 < args.size(); i += 2)
      if (args[i] == "--mb") mb = std::atoll(args[i + 1].c_str());
    if (mb < 1 || mb > (1 << 20)) { std::fprintf(stderr, "--mb: 1 to 1048576\n"); return 2; }
    return Touch(size_t(mb));
  }
  std::fprintf(stderr, "unknown mode '%s' (gen, run or touch)\n", args[0].c_str());
  return 2;
}
