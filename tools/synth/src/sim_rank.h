// Per-rank and per-group simulation state shared by the simulator's sources (simulator.cc,
// replica_steps.cc, step.cc, eager.cc, graphs.cc, pipeline.cc, ...; private header).
//
// A Rank is one traced process: its writer, its host clock (the Python thread issuing ranges and
// launches), a GPU cursor per stream, CUPTI-style correlation ids, PyTorch-style op ids, the CUDA
// graphs it has captured, its own jitter stream, and the pipeline sends/recvs it launched whose
// GPU side is not settled yet. A Group is the TP group of one host: a replica, or one pipeline
// stage of a replica. Times are int64 ns on the host's realtime clock, which reads the reference
// ("true") time plus the host's offset.
// Thread-safety: used by the simulator's single thread.
#pragma once

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "truffld/synth/byte_sink.h"
#include "truffld/synth/model.h"
#include "truffld/synth/record_writer.h"
#include "truffld/synth/rng.h"
#include "truffld/synth/simulator.h"

namespace truffld::synth {

constexpr int kComputeStream = 7;

constexpr int kAuxStream = 13;

struct Simulator::Rank {
  struct Graph {
    int64_t exec_id = 0;
    std::vector<int64_t> nodes;  // exec-graph node ids, in launch order
  };
  // A pipeline send/recv launched on the host; its kernel is written once the peer's is known.
  struct P2PLaunch {
    int64_t launch = 0;  // launch call start (host clock)
    int64_t corr = 0;
    int16_t family = -1;
    int64_t step = -1;   // the launching step's ordinal (FaultBook::CurrentStep)
    Work work;
  };

  Rank(const SynthConfig& cfg, int rank_, int local_, const HostClock& hc, int64_t pid_,
       std::unique_ptr<ByteSink> sink_, int64_t t0, std::string file_)
      : rank(rank_), local(local_), host(hc.name), file(std::move(file_)), pid(pid_),
        sink(std::move(sink_)), rng(cfg.seed, 0x7A11ULL + static_cast<uint64_t>(rank_)), host_t(t0),
        offset(hc.offset_ns), drift(hc.drift_ppm * 1e-6), t_start(t0) {
    noise = cfg.noise;
    w = std::make_unique<RankWriter>(sink.get(), pid, pid, pid + 64 + local);

    gpu_t[0] = gpu_t[1] = t0;
    mono_base = 180000000000000LL + static_cast<int64_t>(rng.Int(0, 900000000000LL));
    MetaFields m;
    m.host = host;
    m.pid = pid;
    m.rank = rank;
    m.local_rank = local;
    m.world_size = cfg.ranks;
    m.realtime_ns = t0;
    m.monotonic_ns = Mono(t0);
    m.cmdline_json = "[\"python3\",\"-m\",\"vllm.entrypoints.openai.api_server\",\"--model\",\"Qwen/Qwen3-8B\","
                     "\"--tensor-parallel-size\",\"" + std::to_string(cfg.tp()) + "\"" +
                     (cfg.pp > 1 ? ",\"--pipeline-parallel-size\",\"" + std::to_string(cfg.pp) + "\"" : "") + "]";
    m.device = local;
    m.device_name = cfg.device_name;
    static const char* kHex = "0123456789abcdef";
    m.device_uuid = "GPU-";
    for (int i = 0; i < 32; ++i) {
      if (i == 8 || i == 12 || i == 16 || i == 20) m.device_uuid.push_back('-');
      m.device_uuid.push_back(kHex[rng.Next() & 0xf]);
    }
    m.config_json = "{\"synthetic\":\"truffld-synth\",\"seed\":\"" + std::to_string(cfg.seed) + "\"";
    if (cfg.device_windows != "all") m.config_json += ",\"device_windows\":\"" + cfg.device_windows + "\"";
    if (cfg.two_tier) m.config_json += ",\"operator_ranges\":\"windows\"";
    m.config_json += "}";
    w->Meta(m);
    last_clock = t0;
  }

  int64_t Mono(int64_t rt) const {
    const double dt = static_cast<double>(rt - t_start);
    return mono_base + static_cast<int64_t>(std::llround(dt * (1.0 - drift)));
  }
  void MaybeClock() {
    if (host_t - last_clock >= 500000000) {
      w->Clock(host_t, Mono(host_t));
      last_clock = host_t;
    }
  }
  // base x lognormal jitter (host times: sigma scaled by NoiseModel::host_scale), at least 1 ns.
  int64_t Jit(int64_t base, double sigma) {
    const int64_t v = static_cast<int64_t>(static_cast<double>(base) * rng.LogNormalFactor(sigma * noise.host_scale));
    return v > 0 ? v : 1;
  }
  // Device duration: jitter plus a rare natural hiccup (unlabelled noise, as in real runs);
  // defaults 4%, 0.2% of kernels 1.15-1.4x (NoiseModel).
  NoiseModel noise;  // set from the config by the constructor

  int64_t DevDur(int64_t nominal) {
    double f = rng.LogNormalFactor(noise.device_jitter);
    if (rng.Uniform() < noise.hiccup_rate) f *= rng.Uniform(1.15, noise.hiccup_max);
    const int64_t v = static_cast<int64_t>(static_cast<double>(nominal) * f);
    return v > 500 ? v : 500;
  }

  // Capture tiers (SynthConfig::device_windows), as the injector switches them: before step
  // `steps`'s push, opens a window when the step is the first of one and sets what is recorded;
  // after its pop, closes the window when the next step is outside it. Between steps everything
  // is recorded (CUDA-graph capture keeps its operator ranges).
  void BeginDetail(const SynthConfig& cfg, int64_t push) {
    if (cfg.device_windows == "all") return;
    const bool in = cfg.InWindow(steps);
    if (in && (steps == 0 || !cfg.InWindow(steps - 1))) w->DeviceWindow(true, steps / cfg.window_every, push - 100, "step");
    w->set_detail(in ? Detail::kFull : cfg.two_tier ? Detail::kStepLevel : Detail::kNoDevice);
  }
  void EndDetail(const SynthConfig& cfg, int64_t pop) {
    if (cfg.device_windows == "all") return;
    if (cfg.InWindow(steps) && !cfg.InWindow(steps + 1)) w->DeviceWindow(false, steps / cfg.window_every, pop + 100, "step");
    w->set_detail(Detail::kFull);
  }
  // At the end of the run: a window still open is closed (trigger "exit").
  void FinishDetail(const SynthConfig& cfg) {
    if (cfg.device_windows == "all" || steps == 0) return;
    if (cfg.InWindow(steps - 1) && cfg.InWindow(steps)) w->DeviceWindow(false, (steps - 1) / cfg.window_every, host_t, "exit");
  }

  void EmitApiAndDevice(const Catalogue& cat, const Work& w_, int64_t api_start, int64_t api_end, int64_t corr,
                        int64_t ds, int64_t de, int64_t graph_id, int64_t node_id) {
    const int stream = w_.stream ? kAuxStream : kComputeStream;
    static const char* kCopy[] = {"HtoD", "DtoH", "DtoD"};
    switch (w_.kind) {
      case WorkKind::kKernel:
      case WorkKind::kNccl: {
        if (api_start >= 0) {
          if (w_.kind == WorkKind::kNccl) {
            w->Api(Channel::kMain, true, 652, "cuLaunchKernelEx", api_start, api_end, corr);
          } else {
            w->Api(Channel::kMain, false, 211, "cudaLaunchKernel_v7000", api_start, api_end, corr);
          }
        }
        KernelFields k;
        k.name_json = cat.Escaped(w_.name);
        k.start = ds;
        k.end = de;
        k.correlation_id = corr;
        k.device = local;
        k.stream = stream;
        k.grid = w_.grid;
        k.block = w_.block;
        k.registers = w_.registers;
        k.shared_memory = w_.shared_memory;
        k.graph_id = graph_id;
        k.graph_node_id = node_id;
        w->Kernel(k);
        ++kernels;
        break;
      }
      case WorkKind::kMemcpy: {
        const char* kind = kCopy[w_.copy];
        if (w_.pageable) w->MarkBlockingCall();
        w->Api(Channel::kMain, false, 41, "cudaMemcpyAsync_v3020", api_start, api_end, corr, stream, w_.bytes, kind);
        const bool h2d = w_.copy == kHtoD;
        const char* host_kind = w_.pageable ? "Pageable" : "Pinned";
        w->Memcpy(kind, h2d ? host_kind : "Device", h2d ? "Device" : host_kind, w_.bytes, ds, de, corr, local, stream);
        break;
      }
      case WorkKind::kMemset:
        w->Api(Channel::kMain, false, 51, "cudaMemsetAsync_v3020", api_start, api_end, corr, stream, w_.bytes);
        w->Memset(w_.bytes, ds, de, corr, local, stream);
        break;
    }
  }

  int rank, local;
  std::string host, file;
  int64_t pid;
  std::unique_ptr<ByteSink> sink;
  std::unique_ptr<RankWriter> w;
  Rng rng;
  int64_t host_t;
  int64_t offset;              // host clock = reference time + offset
  int64_t gpu_t[2] = {0, 0};
  int64_t corr = 0, op_id = 0;
  int64_t next_graph_id = 1, next_node_id = 1;
  double drift;
  int64_t t_start, mono_base = 0, last_clock = 0;
  std::map<int, Graph> graphs;  // decode batch-size bucket -> instantiated graph
  std::vector<P2PLaunch> p2p;   // pipeline sends/recvs of the current step awaiting their peer
  int64_t steps = 0, kernels = 0;
  std::string name_buf;
  // This step's injected host stall (host_gap): before eager operator `gap_op`, `gap_ns` long.
  int64_t gap_op = -1, gap_ns = 0;
  int gap_fault = -1;
  int64_t sched_extra = 0;  // sched_delay: extra wait before this step's push
  // This step's injected stream wait (device_starve): before eager operator `starve_op`.
  int64_t starve_op = -1, starve_ns = 0;
  int starve_fault = -1;

  // What a step changes, for the counterfactual: saved before the step, restored after it.
  struct State {
    Rng rng;
    int64_t host_t, gpu_t0, gpu_t1, corr, op_id, next_graph_id, next_node_id, last_clock, steps, kernels;
    size_t p2p;
  };
  State Save() const {
    return State{rng, host_t, gpu_t[0], gpu_t[1], corr, op_id, next_graph_id, next_node_id, last_clock, steps,
                 kernels, p2p.size()};
  }
  void Restore(const State& s) {
    rng = s.rng;
    host_t = s.host_t;
    gpu_t[0] = s.gpu_t0;
    gpu_t[1] = s.gpu_t1;
    corr = s.corr;
    op_id = s.op_id;
    next_graph_id = s.next_graph_id;
    next_node_id = s.next_node_id;
    last_clock = s.last_clock;
    steps = s.steps;
    kernels = s.kernels;
    p2p.resize(s.p2p);
    gap_op = -1;
    gap_ns = 0;
    gap_fault = -1;
    sched_extra = 0;
    starve_op = -1;
  }
  // device_starve (device_starve.cc): plans this step's stream wait at one of the eager operator
  // boundaries `bounds` (`nominal_device_ns`: the step's nominal device time), and applies it
  // before operator `op` (the GPU idles; the host does not wait).
  void PlanStarve(const std::vector<size_t>& bounds, int64_t nominal_device_ns, const FaultBook& faults);
  void StarveBefore(size_t op, FaultBook* faults);
};

struct Simulator::Group {
  Group(uint64_t seed, int host_index) : rng(seed, 0x6A0000ULL + static_cast<uint64_t>(host_index)), host(host_index) {}
  uint64_t Records() const {
    uint64_t n = 0;
    for (const Rank& r : ranks) n += r.w->records();
    return n;
  }
  Rng rng;
  int host = 0;                 // index of the host this group runs on
  std::vector<Rank> ranks;
  std::vector<int> rank_ids;
  std::vector<std::string> hosts;
  PipelineStage stage;          // the layers this group runs
  GroupStep gs;                 // the current step, as the fault planner sees it
  std::vector<int64_t> pop_ts;  // the current step's range pop per rank
  std::vector<int64_t> wait_from;  // the current step: host time each rank began waiting for it
};

// What one replica step changes on every stage (each rank's State, each group's random stream,
// step and pops): saved before a step and after it, so the step can be re-simulated with the
// faults off (the counterfactual) and the real run then resumed exactly where it was.
struct Simulator::Snapshot {
  struct GroupState {
    Rng rng;
    GroupStep gs;
    std::vector<int64_t> pop_ts;
  };
  std::vector<std::vector<Rank::State>> ranks;
  std::vector<GroupState> groups;
  void Save(const std::vector<Group>& stages);
  void Restore(std::vector<Group>& stages) const;
};

}  // namespace truffld::synth
