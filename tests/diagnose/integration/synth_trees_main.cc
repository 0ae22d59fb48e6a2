// diagnose_synth_trees: writes a synthetic trees.jsonl + labels.jsonl for diagnose tests and for
// comparing Stage I modes (see ../synthetic_trees.h for the workload).
//
// Usage: diagnose_synth_trees OUTDIR [--seed N] [--steps N] [--ranks N] [--healthy]
// Faults (unless --healthy): in every 6th step of each rank (offset by rank) one of
//   uniform  a compute family 3x slower in all its instances of the step,
//   partial  a compute family 4x slower in 2 of its 12 instances,
//   network  both comm families 3x slower (horizontal view).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "../synthetic_trees.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: diagnose_synth_trees OUTDIR [--seed N] [--steps N] [--ranks N] [--healthy]\n");
    return 2;
  }
  namespace t = truffld::diagnose::testing;
  t::SynthSpec spec;
  spec.steps = 60;
  spec.ranks = 2;
  bool healthy = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--healthy") healthy = true;
    else if (i + 1 < argc && a == "--seed") spec.seed = std::strtoull(argv[++i], nullptr, 10);
    else if (i + 1 < argc && a == "--steps") spec.steps = std::atoi(argv[++i]);
    else if (i + 1 < argc && a == "--ranks") spec.ranks = std::atoi(argv[++i]);
    else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
  }
  const char* compute[] = {"aten::mm", "aten::add", "aten::softmax", "aten::copy_"};
  int n = 0;
  for (int r = 0; r < spec.ranks && !healthy; ++r) {
    for (int s = 3 + r; s < spec.steps; s += 6, ++n) {
      switch (n % 3) {
        case 0: spec.faults.push_back({r, s, compute[n % 4], 3.0, 1.0}); break;
        case 1: spec.faults.push_back({r, s, compute[(n + 1) % 4], 4.0, 0.15}); break;
        default:
          spec.faults.push_back({r, s, "ncclAllReduce", 3.0, 1.0});
          spec.faults.push_back({r, s, "ncclAllGather", 3.0, 1.0});
      }
    }
  }
  auto out = t::MakeSyntheticTrees(spec);
  std::string dir = argv[1];
  std::ofstream(dir + "/trees.jsonl") << out.trees;
  std::ofstream(dir + "/labels.jsonl") << out.labels;
  std::printf("wrote %s/trees.jsonl and labels.jsonl (%zu faults)\n", dir.c_str(), spec.faults.size());
  return 0;
}
