// Stage I speed: score N synthetic operator instances (default 5 million, the design paper's
// dataset size) and report wall time. Target: <= 60 s on 2 cores for the default (peer) mode.
//
// Usage: diagnose_stage1_bench [--instances N] [--families F] [--threads T] [--no-faults]
//                              [--mode peer|pooled|within-step|reference] [--max-seconds S]
// Instances are generated in memory (no trees.jsonl parsing): two tensor-parallel ranks in
// lockstep (one rank in the other modes); per step 20 layers of F operator families, one
// instance of each family per layer, with the per-instance detail the peer mode reads. Each
// operator spends ~6 us on the host and launches one kernel; kernels (10-90 us, 4x in the
// prefill steps, every 4th) queue on the device, so the device bounds the step, and the step's
// last operator blocks until the device drains (a sync, as a sampler's copy to the host). All
// costs carry 5% log-normal jitter. Faults: in every step s with s % 50 == 7 the kernels of one
// family (rotating with s / 50) run 3x longer on rank 1, which lengthens that step by 2-6%.
// --no-faults builds the same table without them.
// Exit status 1 if the run exceeds --max-seconds (when given), finds none of the injected
// slowdowns (with faults), or flags more than 1% of the units that hold no fault.
// Prints one line: instances, units, mode, threads, seconds, verdict counts, injected found.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "legacy/stage1.h"
#include "peer/stage.h"
#include "stage2/peer_evidence.h"

using namespace truffld::diagnose;

namespace {

constexpr int kLayers = 20;  // instances of each family per step

struct Options {
  long long instances = 5'000'000;
  int families = 50, threads = 2;
  double max_seconds = 0;
  std::string mode = "peer";
  bool faults = true;
};

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--no-faults") { o->faults = false; continue; }
    if (i + 1 >= argc) { std::fprintf(stderr, "flag %s needs a value\n", a.c_str()); return false; }
    const char* v = argv[++i];
    if (a == "--instances") o->instances = std::atoll(v);
    else if (a == "--families") o->families = std::atoi(v);
    else if (a == "--threads") o->threads = std::atoi(v);
    else if (a == "--mode") o->mode = v;
    else if (a == "--max-seconds") o->max_seconds = std::atof(v);
    else { std::fprintf(stderr, "unknown flag %s\n", a.c_str()); return false; }
  }
  return o->families > 0;
}

// The family whose kernels run 3x longer in step `s` on the faulty rank, or -1.
int InjectedFamily(long long s, int families, bool faults) {
  if (!faults || s % 50 != 7) return -1;
  return static_cast<int>((s / 50) % families);
}

// Writes the instances of one (rank, step) starting at `start` and returns the step's end.
// `slow_family`: the family whose kernels run 3x longer here, or -1.
class StepWriter {
 public:
  StepWriter(InstanceTable* t, int families, bool detail) : t_(t), families_(families), detail_(detail) {
    for (int f = 0; f < families; ++f) fam_ids_.push_back(t->strings.Intern("op" + std::to_string(f)));
    layer_ = t->strings.Intern("backend_op");
  }

  int64_t Write(long long s, int rank, int64_t start, int slow_family) {
    StepInfo st;
    st.rank = rank;
    st.step_index = s;
    st.view = truffld::View::kVertical;
    st.phase = s % 4 == 0 ? "prefill" : "decode";
    st.requests = {"q" + std::to_string(s)};
    st.start_ns = start;
    st.first_instance = static_cast<uint32_t>(t_->size());
    t_->steps.push_back(st);
    const double scale = s % 4 == 0 ? 4.0 : 1.0;
    int64_t host = start + Jitter(2'000);
    int64_t device_free = 0;
    for (int layer = 0; layer < kLayers; ++layer) {
      for (int f = 0; f < families_; ++f) {
        const bool sync = layer == kLayers - 1 && f == families_ - 1;
        const double slow = f == slow_family ? 3.0 : 1.0;
        host = Operator(s, f, 10'000.0 * (3 + f % 7) * scale * slow, sync, host, &device_free) + Jitter(300);
      }
    }
    t_->steps.back().end_ns = host + Jitter(2'000);
    return t_->steps.back().end_ns;
  }

 private:
  int64_t Jitter(double ns) { return static_cast<int64_t>(ns * std::exp(jit_(rng_))); }

  // One operator from host time `host`: its host range, its kernel queued behind `device_free`,
  // and, for the step's last one, the wait for the device to drain. Returns its host end.
  int64_t Operator(long long s, int f, double kernel_ns, bool sync, int64_t host, int64_t* device_free) {
    const int64_t host_ns = Jitter(6'000);
    const int64_t launch = host + host_ns * 4 / 5;
    const int64_t device_start = std::max(launch + Jitter(4'000), *device_free);
    const int64_t device_ns = Jitter(kernel_ns);
    *device_free = device_start + device_ns;
    const int64_t wait = sync ? std::max<int64_t>(0, *device_free + Jitter(2'000) - (host + host_ns)) : 0;
    const int64_t end = host + host_ns + wait;
    FeatureVector v{};
    v[kDurationNs] = static_cast<double>(end - host);
    v[kSelfTimeNs] = v[kDurationNs];
    v[kRuntimeTimeNs] = static_cast<double>(Jitter(3'000) + wait);
    v[kRuntimeCount] = 1;
    v[kDriverTimeNs] = static_cast<double>(Jitter(2'000));  // cuLaunchKernel under the launch
    v[kDriverCount] = 1;
    v[kKernelCount] = 1;
    v[kKernelTimeNs] = static_cast<double>(device_ns);
    v[kLaunchLatencyNs] = static_cast<double>(device_start - launch);
    v[kPhaseCode] = PhaseCode(s % 4 == 0 ? "prefill" : "decode");
    t_->Add(fam_ids_[f], layer_, kNoString, host, end, v);
    if (detail_) {
      InstanceDetail d;
      d.signature = static_cast<uint64_t>(f) * 16 + (s % 4 == 0 ? 1 : 0);
      d.position = static_cast<uint64_t>(f);
      d.host_ns = static_cast<float>(host_ns);
      d.device_ns = static_cast<float>(device_ns);
      d.wait_ns = static_cast<float>(wait);
      d.device_start = device_start;
      d.device_end = *device_free;
      d.flags = kDetailHasDevice;
      t_->detail.push_back(d);
    }
    return end;
  }

  InstanceTable* t_;
  int families_;
  bool detail_;
  std::vector<uint32_t> fam_ids_;
  uint32_t layer_ = 0;
  std::mt19937_64 rng_{42};
  std::normal_distribution<double> jit_{0.0, 0.05};
};

// Builds `steps` lockstep steps of `ranks` ranks (each step starts on every rank when the
// slowest rank finished the previous one); the faults go to the last rank. Returns the number
// of injected faults.
long long BuildTable(const Options& o, long long steps, int ranks, InstanceTable* t) {
  const size_t n = static_cast<size_t>(steps * ranks * o.families * kLayers);
  t->family.reserve(n); t->step.reserve(n); t->layer.reserve(n); t->parent.reserve(n);
  t->start_ns.reserve(n); t->end_ns.reserve(n); t->features.reserve(n);
  if (ranks > 1) t->detail.reserve(n);
  StepWriter w(t, o.families, ranks > 1);
  long long injected = 0;
  int64_t start = 1'000'000;
  for (long long s = 0; s < steps; ++s) {
    const int slow = InjectedFamily(s, o.families, o.faults);
    injected += slow >= 0;
    int64_t end = start;
    for (int rank = 0; rank < ranks; ++rank) end = std::max(end, w.Write(s, rank, start, rank == ranks - 1 ? slow : -1));
    start = end + static_cast<int64_t>(100'000);
  }
  return injected;
}

// Whether unit `u` holds an injected fault (in its step, on the faulty rank).
bool Faulty(const InstanceTable& t, uint32_t u, int ranks, const Options& o) {
  const StepInfo& st = t.steps[u];
  return st.rank.value_or(0) == ranks - 1 && InjectedFamily(st.step_index, o.families, o.faults) >= 0;
}

// Exit status from what was found: 1 when no fault was found (faults injected), when more than
// 1% of the healthy units were flagged, or when the run was too slow.
int ExitStatus(const Options& o, long long injected, long long found, long long false_alarms, long long healthy,
            double secs) {
  int rc = 0;
  if (injected > 0 && found == 0) { std::fprintf(stderr, "FAIL: no injected slowdown found\n"); rc = 1; }
  if (false_alarms > 0.01 * static_cast<double>(healthy)) {
    std::fprintf(stderr, "FAIL: %lld of %lld healthy units flagged (over 1%%)\n", false_alarms, healthy);
    rc = 1;
  }
  if (o.max_seconds > 0 && secs > o.max_seconds) {
    std::fprintf(stderr, "FAIL: %.2f s over the limit of %.2f s\n", secs, o.max_seconds);
    rc = 1;
  }
  return rc;
}

int RunPeer(const Options& o, long long steps) {
  InstanceTable t;
  const long long injected = BuildTable(o, steps / 2, 2, &t);
  PeerStageOptions po;
  po.threads = o.threads;
  const auto t0 = std::chrono::steady_clock::now();
  const PeerStageResult r = RunPeerStage(t, po);
  const std::vector<StepEvidence> ev = BuildPeerEvidence(t, r);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  long long candidates = 0, found = 0, false_alarms = 0, healthy = 0;
  for (const auto& step : ev) {
    const int slow = step.rank == 1 ? InjectedFamily(step.step_index, o.families, o.faults) : -1;
    for (const auto& f : step.families) {
      candidates += f.candidate;
      found += f.candidate && slow >= 0 && f.family == "op" + std::to_string(slow);
    }
  }
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    if (Faulty(t, u, 2, o)) continue;
    ++healthy;
    false_alarms += r.decision.units[u].verdict == truffld::Verdict::kAbnormal;
  }
  const ViewDecision& v = r.decision.views[0];
  std::printf("stage1 instances=%zu units=%zu families=%d mode=peer threads=%d faults=%s seconds=%.2f tests=%zu "
              "judged=%d abnormal=%d immaterial=%d insufficient=%d false_alarms=%lld candidates=%lld "
              "injected_found=%lld/%lld\n",
              t.size(), t.steps.size(), o.families, o.threads, o.faults ? "on" : "off", secs, r.rows.size(), v.judged,
              v.flagged, v.immaterial, v.insufficient, false_alarms, candidates, found, injected);
  return ExitStatus(o, injected, found, false_alarms, healthy, secs);
}

int RunLegacy(const Options& o, long long steps) {
  InstanceTable t;
  const long long injected = BuildTable(o, steps, 1, &t);
  StageOneOptions so;
  so.threads = o.threads;
  so.mode = o.mode == "within-step" ? ScoringMode::kWithinStep
          : o.mode == "reference" ? ScoringMode::kReference : ScoringMode::kPooled;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = RunStageOne(t, &t, so);  // reference mode scores the run against itself
  if (!r.ok()) { std::fprintf(stderr, "%s\n", r.status().ToString().c_str()); return 1; }
  auto ev = BuildEvidence(t, *r);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  long long candidates = 0, found = 0;
  for (const auto& step : ev) {
    const int slow = InjectedFamily(step.step_index, o.families, o.faults);
    for (const auto& f : step.families) {
      candidates += f.candidate;
      found += f.candidate && slow >= 0 && f.family == "op" + std::to_string(slow);
    }
  }
  std::printf("stage1 instances=%zu steps=%lld families=%d mode=%s threads=%d faults=%s seconds=%.2f "
              "candidates=%lld injected_found=%lld/%lld\n",
              t.size(), steps, o.families, o.mode.c_str(), o.threads, o.faults ? "on" : "off", secs, candidates,
              found, injected);
  // The legacy modes name candidate families, not unit verdicts: no false-alarm count.
  return ExitStatus(o, injected, found, 0, 0, secs);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) return 2;
  const long long steps = std::max(1LL, o.instances / (o.families * kLayers));
  return o.mode == "peer" ? RunPeer(o, steps) : RunLegacy(o, steps);
}
