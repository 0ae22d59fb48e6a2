// hang_app: one rank of a CPU "tensor-parallel group" that really hangs, for the hang test
// (tests/inject/hang_kill_test.py). Run once per rank with RANK set and the injector loaded
// through NVTX_INJECTION64_PATH; the ranks meet at every collective through marker files in
// DIR (a barrier, as a collective ties its participants together).
//
// Usage: hang_app DIR WORLD STEPS CULPRIT STEP COLL
// Each step is an NVTX step range holding COLLS=3 rounds of an operator range (aten::mm) and a
// collective range ("nccl:all_reduce, bytes=64, world_size=WORLD, impl=pynccl", as truffld's
// hooks name a pynccl call) inside which the rank waits for every other rank. Rank CULPRIT, at
// step STEP before collective COLL (0-based), enters aten::index_select instead, prints
// "stuck" and sleeps until killed; the others enter that collective, print "waiting" once it
// has kept them 50 ms, and wait until killed.
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

constexpr int kColls = 3;

bool Exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

// Waits until every rank has reached barrier n; prints "waiting" after 50 ms of waiting.
void Barrier(const std::string& dir, int world, int rank, int n) {
  const std::string me = dir + "/b" + std::to_string(n) + "-r" + std::to_string(rank);
  if (std::FILE* f = std::fopen(me.c_str(), "w")) std::fclose(f);
  for (int waited_ms = 0;; ++waited_ms) {
    int here = 0;
    for (int r = 0; r < world; ++r) here += Exists(dir + "/b" + std::to_string(n) + "-r" + std::to_string(r));
    if (here == world) return;
    if (waited_ms == 50) {
      std::printf("waiting\n");
      std::fflush(stdout);
    }
    usleep(1000);
  }
}

void Busy(int us) {
  volatile unsigned x = 0;
  for (int i = 0; i < us * 50; ++i) x = x + i;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7 || !std::getenv("RANK")) {
    std::fprintf(stderr, "usage: RANK=r hang_app DIR WORLD STEPS CULPRIT STEP COLL\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int world = std::atoi(argv[2]), steps = std::atoi(argv[3]), culprit = std::atoi(argv[4]);
  const int stuck_step = std::atoi(argv[5]), stuck_coll = std::atoi(argv[6]);
  const int rank = std::atoi(std::getenv("RANK"));
  const std::string coll = "nccl:all_reduce, bytes=64, world_size=" + std::to_string(world) + ", impl=pynccl";
  int op_id = 0;
  for (int s = 0; s < steps; ++s) {
    nvtxRangePushA(("step_execute_model[request_ids:req-" + std::to_string(s) + "][phase:decode]").c_str());
    for (int c = 0; c < kColls; ++c) {
      nvtxRangePushA(("aten::mm, op_id = " + std::to_string(++op_id)).c_str());
      Busy(200);
      nvtxRangePop();
      if (rank == culprit && s == stuck_step && c == stuck_coll) {
        nvtxRangePushA(("aten::index_select, op_id = " + std::to_string(++op_id)).c_str());
        std::printf("stuck\n");
        std::fflush(stdout);
        for (;;) pause();
      }
      nvtxRangePushA(coll.c_str());
      Barrier(dir, world, rank, s * kColls + c);
      nvtxRangePop();
    }
    nvtxRangePop();
  }
  std::printf("done\n");
  return 0;
}
