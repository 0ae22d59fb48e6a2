// Hand-built InstanceTables with per-instance detail, for the peer-relative detector's tests.
//
// PeerTableBuilder adds units (one (rank, step, view) each) and operator instances with the
// InstanceDetail the peer modules read (signature, position, own host and device time, device
// span, parent). SimulatedRun builds a whole healthy run (TP groups in lockstep, steps of a few
// sizes, layers of identical work, collectives that end together) with log-normal jitter and
// optional planted faults, for calibration and detection tests. Deterministic per seed.
// Thread-safety: plain data.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "peer/stage.h"
#include "read/instances.h"

namespace truffld::diagnose::testing {

class PeerTableBuilder {
 public:
  InstanceTable t;

  // Begins a unit; instances added next belong to it.
  void Unit(int64_t rank, int64_t step, const std::string& view, std::vector<std::string> requests,
            int64_t start, int64_t end, const std::string& host = "h0", const std::string& phase = "decode") {
    StepInfo s;
    s.rank = rank;
    s.step_index = step;
    if (!ParseView(view, &s.view)) throw std::invalid_argument("PeerTableBuilder::Unit: view " + view);
    s.requests = std::move(requests);
    s.start_ns = start;
    s.end_ns = end;
    s.host = host;
    s.phase = phase;
    s.first_instance = static_cast<uint32_t>(t.size());
    t.steps.push_back(std::move(s));
  }

  struct Op {
    std::string family, layer = "backend_op";
    int64_t start = 0, end = 0;
    double host_ns = 0, device_ns = 0;  // device_ns 0: no device work
    uint64_t signature = 0, position = 0;
    int64_t device_start = 0, device_end = 0;
    int32_t parent = -1;
    double comm_bytes = 0;
    float blocks = 0;  // grid blocks of its kernels (the size a fitted expectation uses)
  };

  uint32_t Add(const Op& op) {
    FeatureVector f{};
    f[kDurationNs] = static_cast<double>(op.end - op.start);
    f[kSelfTimeNs] = op.host_ns;
    f[kKernelTimeNs] = op.device_ns;
    f[kCommBytes] = op.comm_bytes;
    const uint32_t i = t.Add(t.strings.Intern(op.family), t.strings.Intern(op.layer), kNoString, op.start, op.end, f);
    InstanceDetail d;
    d.signature = op.signature;
    d.position = op.position;
    d.host_ns = static_cast<float>(op.host_ns);
    d.device_ns = static_cast<float>(op.device_ns);
    d.parent = op.parent;
    d.blocks = op.blocks;
    if (op.device_ns > 0) {
      d.flags |= kDetailHasDevice;
      d.device_start = op.device_start ? op.device_start : op.start;
      d.device_end = op.device_end ? op.device_end : d.device_start + static_cast<int64_t>(op.device_ns);
    }
    t.detail.push_back(d);
    t.kernels.emplace_back();
    t.api_calls.emplace_back();
    return i;
  }
};

// A healthy tensor-parallel serving run, optionally with planted slowdowns.
struct PlantedFault {
  int rank = 0, step = 0;
  std::string family = "aten::mm";  // "ncclAllReduce" slows the shared transfer
  double factor = 2.0;
  bool straggle = false;            // instead: the rank enters every collective late by
                                    // `factor` x 100 us (slow compute before them)
};

struct RunSpec {
  int tp = 2, steps = 60, layers = 8;
  uint64_t seed = 1;
  double device_jitter = 0.04, host_jitter = 0.25;
  // Share of host ranges delayed by a heavy-tailed factor (Pareto, shape 1.1, at least 1): what a
  // real eager engine's host side shows (allocator, lazy kernel loading, the interpreter), where
  // 1% of a family's ranges run 3x to 60x their usual time on a healthy run.
  double host_tail = 0;
  bool single_shape = false;  // every step the same decode batch (default: three sizes, every third a prefill)
  std::vector<PlantedFault> faults;
};

inline InstanceTable SimulatedRun(const RunSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  auto jit = [&](double base, double sigma) { return base * std::exp(sigma * z(rng)); };
  auto host = [&](double base) {
    const double h = jit(base, spec.host_jitter);
    return spec.host_tail > 0 && u01(rng) < spec.host_tail ? h * std::pow(1.0 - u01(rng), -1.0 / 1.1) : h;
  };
  auto fault = [&](int rank, int step, const std::string& fam) -> const PlantedFault* {
    for (const auto& f : spec.faults) {
      if (f.rank == rank && f.step == step && (f.family == fam || f.straggle)) return &f;
    }
    return nullptr;
  };
  PeerTableBuilder b;
  const char* ops[] = {"aten::mm", "aten::silu", "aten::mul"};
  const double base_dev[] = {40000, 6000, 5000};
  for (int s = 0; s < spec.steps; ++s) {
    const double size = spec.single_shape ? 1.0 : 1.0 + (s % 3);  // three batch sizes, repeating
    const char* phase = !spec.single_shape && s % 3 == 0 ? "prefill" : "decode";
    const int64_t t0 = 1000000000 + int64_t{s} * 5000000;
    const std::vector<std::string> req = {"req" + std::to_string(s % 7), "req" + std::to_string(s % 5 + 10)};
    // Collective timing shared by the group: per layer, entries per rank then one end.
    std::vector<std::vector<int64_t>> entry(static_cast<size_t>(spec.layers), std::vector<int64_t>(static_cast<size_t>(spec.tp)));
    std::vector<int64_t> end(static_cast<size_t>(spec.layers));
    for (int l = 0; l < spec.layers; ++l) {
      double slow = 1.0;
      for (int r = 0; r < spec.tp; ++r) {
        const PlantedFault* f = fault(r, s, "ncclAllReduce");
        if (f && !f->straggle) slow = std::max(slow, f->factor);
      }
      int64_t last = 0;
      for (int r = 0; r < spec.tp; ++r) {
        const PlantedFault* f = fault(r, s, "");
        const int64_t late = f && f->straggle ? static_cast<int64_t>(f->factor * 100000) : 0;
        entry[l][r] = t0 + 200000 + l * 400000 + static_cast<int64_t>(jit(3000, 0.3)) + late;
        last = std::max(last, entry[l][r]);
      }
      end[l] = last + static_cast<int64_t>(jit(20000 * size, 0.05) * slow);
    }
    for (int r = 0; r < spec.tp; ++r) {
      b.Unit(r, s, "vertical", req, t0, t0 + 4000000, "h0", phase);
      for (int l = 0; l < spec.layers; ++l) {
        for (int k = 0; k < 3; ++k) {
          const PlantedFault* f = fault(r, s, ops[k]);
          const double fac = f && !f->straggle ? f->factor : 1.0;
          const int64_t st = t0 + l * 400000 + k * 100000;
          PeerTableBuilder::Op op;
          op.family = ops[k];
          op.start = st;
          op.end = st + 20000;
          op.host_ns = host(8000);
          op.device_ns = jit(base_dev[k] * size, spec.device_jitter) * fac;
          op.signature = static_cast<uint64_t>(k * 100 + static_cast<int>(size));
          op.position = static_cast<uint64_t>(k + 1);
          b.Add(op);
        }
      }
    }
    for (int r = 0; r < spec.tp; ++r) {
      b.Unit(r, s, "horizontal", req, t0, t0 + 4000000, "h0", phase);
      for (int l = 0; l < spec.layers; ++l) {
        PeerTableBuilder::Op op;
        op.family = "ncclAllReduce";
        op.layer = "comm";
        op.start = entry[l][r] - 5000;
        op.end = entry[l][r];
        op.host_ns = host(5000);
        op.device_start = entry[l][r];
        op.device_end = end[l];
        op.device_ns = static_cast<double>(end[l] - entry[l][r]);
        op.signature = 900 + static_cast<uint64_t>(size);
        op.position = 9;
        op.comm_bytes = 1e6 * size;
        b.Add(op);
      }
    }
  }
  return std::move(b.t);
}

// Options for tests of the statistics on these tables: no impact floor, no run findings. The tables give each
// operator a device interval starting at its host start, not a device schedule (kernels of one
// step overlap), so the what-if replay has nothing real to re-time; the replay and the floor are
// tested on hand-built schedules (replay_test.cc) and real engine runs (diagnose_real_engine_runs).
inline PeerStageOptions StatisticsOnly() {
  PeerStageOptions o;
  o.decision.min_impact_share = 0;
  o.run_patterns.min_units = 1 << 30;
  return o;
}

}  // namespace truffld::diagnose::testing
