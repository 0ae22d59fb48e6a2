// kineto_bench: end-to-end cost of truffld-merge on a Kineto trace against Python's json.load.
//
//   kineto_bench FILE [--repeat N] [--python /usr/bin/python3]
//   kineto_bench ../shared/data/kineto/hta_df_index_resolver.json.gz
//
// For FILE it times, best of N runs (default 3): import (read + decompress + parse), merge
// (ranges, linking, trees), trees.jsonl and trace.json writing (to /dev/null), each as wall time
// and as this thread's CPU time; then `python3 -c "json.load(gzip.open(FILE))"` (or open() for
// plain JSON), as wall time and the child's CPU time. It prints both and the ratio, which the
// issue's target reads "truffld end to end faster than Python's json.load of the same file".
// CPU time is the figure to trust on a shared machine; wall time is printed beside it.
// Not a unit test: label `bench`, excluded from CI.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "truffld/merge/import_kineto.h"
#include "truffld/merge/pipeline.h"
#include "truffld/merge/writers.h"

using namespace truffld::merge;

namespace {

struct Clock {
  double wall, cpu;  // seconds; cpu = this thread's user + system time
  static Clock Now() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    return {wall, ts.tv_sec + ts.tv_nsec / 1e9};
  }
};

struct Phases {
  double wall[4] = {1e9, 1e9, 1e9, 1e9};
  double cpu[4] = {1e9, 1e9, 1e9, 1e9};
  void Keep(int i, Clock a, Clock b) {
    wall[i] = std::min(wall[i], b.wall - a.wall);
    cpu[i] = std::min(cpu[i], b.cpu - a.cpu);
  }
};

double ChildrenCpu() {
  rusage ru;
  getrusage(RUSAGE_CHILDREN, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

int Usage() {
  std::fprintf(stderr, "usage: kineto_bench FILE [--repeat N] [--python PATH]\n"
                       "  e.g. kineto_bench ../shared/data/kineto/hta_df_index_resolver.json.gz\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file, python = "/usr/bin/python3";
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--python" && i + 1 < argc) python = argv[++i];
    else if (a == "-h" || a == "--help") return Usage();
    else file = a;
  }
  if (file.empty()) return Usage();

  Phases p;
  size_t events = 0, trees = 0;
  for (int r = 0; r < repeat; ++r) {
    Clock t0 = Clock::Now();
    auto tf = ImportKineto(file, ImportOptions{});
    if (!tf.ok()) { std::fprintf(stderr, "%s\n", tf.status().ToString().c_str()); return 1; }
    events = tf->events.size();
    Clock t1 = Clock::Now();
    std::vector<TraceFile> files;
    files.push_back(std::move(*tf));
    MergeOptions mo;
    mo.threads = 1;
    auto m = Merge(std::move(files), mo);
    if (!m.ok()) { std::fprintf(stderr, "%s\n", m.status().ToString().c_str()); return 1; }
    Clock t2 = Clock::Now();
    std::FILE* devnull = std::fopen("/dev/null", "wb");
    JsonOut tj(devnull, "/dev/null");
    trees = WriteTreesJsonl(*m, &tj, TreeLayout::kGrouped);  // as the CLI
    (void)tj.Flush();
    Clock t3 = Clock::Now();
    JsonOut ct(devnull, "/dev/null");
    WriteChromeTrace(*m, &ct);
    (void)ct.Flush();
    Clock t4 = Clock::Now();
    std::fclose(devnull);
    p.Keep(0, t0, t1), p.Keep(1, t1, t2), p.Keep(2, t2, t3), p.Keep(3, t3, t4);
  }
  double wall = 0, cpu = 0;
  for (int i = 0; i < 4; ++i) wall += p.wall[i], cpu += p.cpu[i];
  std::printf("%s: %zu events imported, %zu tree lines\n", file.c_str(), events, trees);
  std::printf("truffld  import %.3f / merge %.3f / trees %.3f / trace %.3f s cpu; total cpu %.3f s, wall %.3f s\n",
              p.cpu[0], p.cpu[1], p.cpu[2], p.cpu[3], cpu, wall);

  const bool gz = file.size() > 3 && file.compare(file.size() - 3, 3, ".gz") == 0;
  std::string cmd = python + " -c \"import json,gzip,sys; json.load(" +
                    (gz ? "gzip.open(sys.argv[1])" : "open(sys.argv[1])") + ")\" '" + file + "'";
  double py_wall = 1e9, py_cpu = 1e9;
  for (int r = 0; r < repeat; ++r) {
    double c0 = ChildrenCpu();
    auto w0 = std::chrono::steady_clock::now();
    if (std::system(cmd.c_str()) != 0) { std::fprintf(stderr, "python failed: %s\n", cmd.c_str()); return 1; }
    py_wall = std::min(py_wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count());
    py_cpu = std::min(py_cpu, ChildrenCpu() - c0);
  }
  std::printf("python   json.load cpu %.3f s, wall %.3f s\n", py_cpu, py_wall);
  std::printf("ratio    python/truffld: cpu %.2fx, wall %.2fx (best of %d)\n", py_cpu / cpu, py_wall / wall, repeat);
  return 0;
}
