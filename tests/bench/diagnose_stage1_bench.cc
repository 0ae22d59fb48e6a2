// Stage I speed: score N synthetic operator instances (default 5 million, the design paper's
// dataset size) and report wall time. Target: <= 60 s on 2 cores for the default (peer) mode.
//
// Usage: diagnose_stage1_bench [--instances N] [--families F] [--threads T]
//                              [--mode peer|pooled|within-step|reference] [--max-seconds S]
// Instances are generated in memory (no trees.jsonl parsing), two tensor-parallel ranks in
// lockstep, per step F families of equal size (with the per-instance detail the peer mode
// reads), bimodal prefill/decode durations with 5% log-normal jitter, and one family slowed 3x
// on rank 1 in every 50th step. Exit status 1 if the run exceeds --max-seconds (when given) or
// finds none of the injected slowdowns. Prints one line: instances, steps, mode, threads,
// seconds, candidates, injected found.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "stage2/peer_evidence.h"
#include "peer/stage.h"
#include "legacy/stage1.h"

using namespace truffld::diagnose;

int main(int argc, char** argv) {
  long long n = 5'000'000;
  int families = 50, threads = 2;
  double max_seconds = 0;
  std::string mode = "peer";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--instances") n = std::atoll(argv[i + 1]);
    else if (a == "--families") families = std::atoi(argv[i + 1]);
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--mode") mode = argv[i + 1];
    else if (a == "--max-seconds") max_seconds = std::atof(argv[i + 1]);
    else { std::fprintf(stderr, "unknown flag %s\n", a.c_str()); return 2; }
  }
  const int per_family = 20;
  const long long steps = std::max(1LL, n / (families * per_family));
  std::mt19937_64 rng(42);
  std::normal_distribution<double> jit(0.0, 0.05);
  InstanceTable t;
  std::vector<uint32_t> fam_ids;
  for (int f = 0; f < families; ++f) fam_ids.push_back(t.strings.Intern("op" + std::to_string(f)));
  uint32_t layer = t.strings.Intern("backend_op");
  t.family.reserve(n); t.step.reserve(n); t.layer.reserve(n); t.parent.reserve(n);
  t.start_ns.reserve(n); t.end_ns.reserve(n); t.features.reserve(n);
  const bool peer = mode == "peer";
  for (long long s = 0; s < (peer ? steps / 2 : steps); ++s) {
    for (int rank = 0; rank < (peer ? 2 : 1); ++rank) {
      StepInfo st;
      st.rank = rank;
      st.step_index = s;
      st.view = truffld::View::kVertical;
      st.phase = s % 4 == 0 ? "prefill" : "decode";
      st.requests = {"q" + std::to_string(s)};
      st.start_ns = s * 10'000'000;
      st.end_ns = st.start_ns + 9'000'000;
      st.first_instance = static_cast<uint32_t>(t.size());
      t.steps.push_back(st);
      const double scale = s % 4 == 0 ? 4.0 : 1.0;
      for (int f = 0; f < families; ++f) {
        const bool injected = s % 50 == 7 && f == static_cast<int>(s % families) && (!peer || rank == 1);
        const double slow = injected ? 3.0 : 1.0;
        for (int i = 0; i < per_family; ++i) {
          FeatureVector v{};
          double base = 10'000.0 * (1 + f % 7) * scale;
          v[kDurationNs] = base * slow * std::exp(jit(rng));
          v[kSelfTimeNs] = 0.2 * v[kDurationNs] * std::exp(jit(rng));
          v[kRuntimeTimeNs] = 3'000 * std::exp(jit(rng));
          v[kRuntimeCount] = 1 + f % 3;
          v[kDriverTimeNs] = 2'000 * std::exp(jit(rng));  // cuLaunchKernel under each launch
          v[kDriverCount] = 1 + f % 3;
          v[kKernelCount] = 1 + f % 3;
          v[kKernelTimeNs] = 0.7 * v[kDurationNs] * std::exp(jit(rng));
          v[kLaunchLatencyNs] = 4'000 * std::exp(jit(rng));
          v[kPhaseCode] = PhaseCode(st.phase);
          const int64_t start = st.start_ns + (f * per_family + i) * 1000;
          t.Add(fam_ids[f], layer, kNoString, start, start + static_cast<int64_t>(v[kDurationNs]), v);
          if (peer) {
            InstanceDetail d;
            d.signature = static_cast<uint64_t>(f) * 16 + (s % 4 == 0 ? 1 : 0);
            d.position = static_cast<uint64_t>(f);
            d.host_ns = static_cast<float>(v[kSelfTimeNs]);
            d.device_ns = static_cast<float>(v[kKernelTimeNs]);
            d.device_start = start;
            d.device_end = start + static_cast<int64_t>(v[kKernelTimeNs]);
            d.flags = kDetailHasDevice;
            t.detail.push_back(d);
          }
        }
      }
    }
  }
  if (peer) {
    PeerStageOptions po;
    po.threads = threads;
    auto t0 = std::chrono::steady_clock::now();
    const PeerStageResult r = RunPeerStage(t, po);
    const std::vector<StepEvidence> ev = BuildPeerEvidence(t, r);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    long long candidates = 0, found = 0, flagged = r.decision.views[0].flagged;
    for (const auto& step : ev) {
      for (const auto& f : step.families) {
        candidates += f.candidate;
        found += f.candidate && step.rank == 1 && step.step_index % 50 == 7 &&
                 f.family == "op" + std::to_string(step.step_index % families);
      }
    }
    std::printf("stage1 instances=%zu units=%zu families=%d mode=peer threads=%d seconds=%.2f tests=%zu "
                "abnormal=%lld candidates=%lld injected_found=%lld/%lld\n",
                t.size(), t.steps.size(), families, threads, secs, r.rows.size(), flagged, candidates, found,
                (steps / 2 + 42) / 50);
    if (found == 0) return 1;
    if (max_seconds > 0 && secs > max_seconds) return 1;
    return 0;
  }
  StageOneOptions o;
  o.threads = threads;
  o.mode = mode == "within-step" ? ScoringMode::kWithinStep
         : mode == "reference" ? ScoringMode::kReference : ScoringMode::kPooled;
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunStageOne(t, &t, o);  // reference mode scores the run against itself
  if (!r.ok()) { std::fprintf(stderr, "%s\n", r.status().ToString().c_str()); return 1; }
  auto ev = BuildEvidence(t, *r);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  long long candidates = 0, injected_found = 0;
  for (const auto& step : ev) {
    for (const auto& f : step.families) {
      candidates += f.candidate;
      if (f.candidate && step.step_index % 50 == 7 && f.family == "op" + std::to_string(step.step_index % families)) {
        ++injected_found;
      }
    }
  }
  std::printf("stage1 instances=%zu steps=%lld families=%d mode=%s threads=%d seconds=%.2f "
              "candidates=%lld injected_found=%lld/%lld\n",
              t.size(), steps, families, mode.c_str(), threads, secs, candidates, injected_found,
              (steps + 42) / 50);
  if (injected_found == 0) return 1;
  if (max_seconds > 0 && secs > max_seconds) return 1;
  return 0;
}
