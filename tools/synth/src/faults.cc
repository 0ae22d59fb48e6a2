// Fault planning and effects (see faults.h); ledger.jsonl and labels.jsonl are written by
// faults_truth.cc.
#include "truffld/synth/faults.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "truffld/synth/record_writer.h"

namespace truffld::synth {
namespace {

bool InWindow(const LedgerEntry& e, int64_t t) { return t >= e.start && (e.open ? true : t < e.end); }

}  // namespace

FaultBook::FaultBook(const SynthConfig& cfg, const Catalogue& cat)
    : cfg_(cfg), cat_(cat), rng_(cfg.seed, 0xFA017ULL), active_(cfg.ranks, -1), truth_(cfg.ranks) {
  fam_host_ = cat.Id(kFamHostOutside);
  fam_between_ = cat.Id(kFamBetweenSteps);
  fam_calls_ = cat.Id(kFamCallsUnderStep);
  fam_idle_ = cat.Id(kFamDeviceIdle);
  if (cfg.fault_classes.empty() || cfg.abnormal_fraction <= 0) return;
  // Share of entries that label (intensity above threshold) and mean window length in steps.
  double q = 0;
  for (double f : cfg.intensities) q += f >= cfg.label_min_intensity ? 1 : 0;
  q /= static_cast<double>(cfg.intensities.size());
  double mean_len = 0;
  for (FaultClass c : cfg.fault_classes) {
    const bool multi = c == FaultClass::kCudaKernel || c == FaultClass::kMemcpy || c == FaultClass::kCommunication;
    mean_len += multi ? 2.0 : 1.0;
  }
  mean_len /= static_cast<double>(cfg.fault_classes.size());
  if (q <= 0) q = 1;  // nothing labels; still inject at the requested rate
  const double coverage = std::min(0.95, cfg.abnormal_fraction / q);
  // Idle gaps are geometric with mean (1 - p) / p steps: coverage = L / (L + (1 - p) / p).
  p_start_ = 1.0 / (1.0 + mean_len * (1.0 / coverage - 1.0));
}

std::optional<FaultClass> FaultBook::PickClass(bool comm_ok) {
  std::vector<FaultClass> ok;
  for (FaultClass c : cfg_.fault_classes) {
    if (c == FaultClass::kCommunication && !comm_ok) continue;
    if (c == FaultClass::kSchedDelay) continue;  // opened before the step, by BeforeStep
    ok.push_back(c);
  }
  if (ok.empty()) return std::nullopt;  // e.g. only communication asked, and no scope fits now
  return ok[static_cast<size_t>(rng_.Int(0, static_cast<int64_t>(ok.size()) - 1))];
}

int FaultBook::NewEntry(FaultClass cls, int rank, const std::string& host, int64_t start, double intensity) {
  LedgerEntry e;
  e.id = "f" + std::to_string(ledger_.size());
  e.cls = cls;
  e.rank = rank;
  e.host = host;
  e.start = start;
  e.end = start;
  e.intensity = intensity;
  e.sufficient = intensity >= cfg_.label_min_intensity;
  e.first_step = e.last_step = static_cast<int64_t>(truth_[rank].size()) - 1;
  e.open = true;
  ledger_.push_back(std::move(e));
  return static_cast<int>(ledger_.size() - 1);
}

void FaultBook::BeginStep(const GroupStep& gs) {
  if (counterfactual_) return;
  const std::vector<int>& ranks = gs.ranks;
  for (int r : ranks) {
    truth_[r].emplace_back();
    truth_[r].back().prefill = gs.prefill;
    truth_[r].back().phase = gs.phase;
  }
  if (p_start_ <= 0) return;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    if (active_[r] >= 0 || !rng_.Bernoulli(p_start_)) continue;
    const unsigned scopes = CommScopesFor(gs, i);
    const std::optional<FaultClass> picked = PickClass(scopes != 0);
    if (!picked) continue;
    const FaultClass cls = *picked;
    const double intensity = cfg_.intensities[static_cast<size_t>(
        rng_.Int(0, static_cast<int64_t>(cfg_.intensities.size()) - 1))];
    const int64_t len = rng_.Int(1, 3);
    if (cls == FaultClass::kCommunication) {
      OpenComm(gs, i, scopes, intensity, len);
      continue;
    }
    const int idx = NewEntry(cls, r, gs.hosts[i], gs.push_ts[i], intensity);
    LedgerEntry& e = ledger_[idx];
    e.steps_left = 1;
    switch (cls) {
      case FaultClass::kSoftware: {
        // Decode steps replay the model body from a graph: only eager operators can be delayed.
        static const std::vector<std::string> kEagerInDecode = {"aten::mm", "aten::argmax"};
        const auto& pool = (gs.decode_graph ? kEagerInDecode : SoftwareTargets());
        e.target = pool[static_cast<size_t>(rng_.Int(0, static_cast<int64_t>(pool.size()) - 1))];
        e.family = cat_.Id(e.target);
        break;
      }
      case FaultClass::kCudaKernel: {
        const auto& pool = KernelFaultClasses();
        e.kernel_class = pool[static_cast<size_t>(rng_.Int(0, static_cast<int64_t>(pool.size()) - 1))];
        e.target = KernelClassName(e.kernel_class);
        e.steps_left = len;
        break;
      }
      case FaultClass::kMemcpy:
        e.target = "memcpy";
        e.steps_left = len;
        break;
      case FaultClass::kContention: {
        e.target = "gpu";
        e.start = gs.push_ts[i] +
                  static_cast<int64_t>(rng_.Uniform(0.05, 0.6) * static_cast<double>(gs.nominal_ns));
        e.end = e.start + std::max<int64_t>(20000, static_cast<int64_t>(rng_.Uniform(0.1, 0.3) * gs.nominal_ns));
        e.open = false;
        break;
      }
      case FaultClass::kEngine:
        e.target = "step";
        e.start = e.end = -1;  // set by EngineDelay
        e.open = false;
        break;
      case FaultClass::kHostGap:
      case FaultClass::kDeviceStarve:
        e.target = e.cls == FaultClass::kHostGap ? kFamHostOutside : kFamDeviceIdle;
        e.family = e.cls == FaultClass::kHostGap ? fam_host_ : fam_idle_;
        e.gap_frac = rng_.Uniform();
        e.start = e.end = -1;  // set when the stall happens (SetWindow)
        e.open = false;
        break;
      case FaultClass::kDirectCopy:
        e.target = kFamCallsUnderStep;
        e.family = fam_calls_;
        break;
      case FaultClass::kCommunication:
      case FaultClass::kSchedDelay:
        break;
    }
    active_[r] = idx;
  }
}

void FaultBook::EndStep(const std::vector<int>& ranks, const std::vector<int64_t>& pop_ts) {
  if (counterfactual_) return;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    if (active_[r] < 0) continue;
    LedgerEntry& e = ledger_[active_[r]];
    e.last_step = static_cast<int64_t>(truth_[r].size()) - 1;
    if (--e.steps_left > 0) continue;
    if (e.open) {
      e.end = pop_ts[i];
      e.open = false;
    }
    if (e.cls == FaultClass::kContention) {  // the window never outlives its step
      e.end = std::min(e.end, pop_ts[i]);
      e.start = std::min(e.start, e.end);
    }
    if ((e.cls == FaultClass::kEngine || e.cls == FaultClass::kHostGap || e.cls == FaultClass::kDeviceStarve) &&
        e.start < 0) {
      e.start = e.end = pop_ts[i];  // no preparation op ran / no operator boundary: empty window
    }
    active_[r] = -1;
  }
}

void FaultBook::Finish(const std::vector<int>& ranks, const std::vector<int64_t>& pop_ts) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    if (active_[r] < 0) continue;
    LedgerEntry& e = ledger_[active_[r]];
    if (e.open) e.end = pop_ts[i];
    e.open = false;
    e.steps_left = 0;
    active_[r] = -1;
  }
}

int64_t FaultBook::SoftwareDelay(int rank, int16_t family, int64_t nominal_ns, int* fault) const {
  const int a = active_[rank];
  if (a < 0 || counterfactual_) return 0;
  const LedgerEntry& e = ledger_[a];
  if (e.cls != FaultClass::kSoftware || e.family != family) return 0;
  *fault = a;
  return static_cast<int64_t>((e.intensity - 1.0) * static_cast<double>(nominal_ns));
}

int64_t FaultBook::EngineDelay(int rank, int64_t t, int64_t nominal_ns, int* fault) {
  const int a = active_[rank];
  if (a < 0 || counterfactual_) return 0;
  LedgerEntry& e = ledger_[a];
  if (e.cls != FaultClass::kEngine || e.start >= 0) return 0;
  const int64_t d = static_cast<int64_t>((e.intensity - 1.0) * static_cast<double>(nominal_ns)) + 1000;
  e.start = t;
  e.end = t + d;
  *fault = a;
  return d;
}

double FaultBook::DeviceFactor(int rank, WorkKind kind, KernelClass cls, int16_t family, int64_t gpu_start,
                               int* fault) const {
  const int a = active_[rank];
  if (a < 0 || counterfactual_) return 1.0;
  const LedgerEntry& e = ledger_[a];
  bool hit = false;
  switch (e.cls) {
    case FaultClass::kCudaKernel: hit = kind == WorkKind::kKernel && cls == e.kernel_class; break;
    case FaultClass::kMemcpy: hit = kind == WorkKind::kMemcpy; break;
    case FaultClass::kContention: hit = true; break;
    case FaultClass::kCommunication: hit = kind == WorkKind::kNccl && family == e.family; break;
    default: break;
  }
  if (!hit || !InWindow(e, gpu_start)) return 1.0;
  *fault = a;
  return e.intensity;
}

void FaultBook::Hit(int rank, int fault, int16_t family, bool horizontal, int64_t step) {
  if (counterfactual_ || fault < 0 || !ledger_[fault].sufficient || truth_[rank].empty()) return;
  ++hits_;
  StepTruth& st = step >= 0 && step < static_cast<int64_t>(truth_[rank].size()) ? truth_[rank][static_cast<size_t>(step)]
                                                                                 : truth_[rank].back();
  const int v = horizontal ? 1 : 0;
  st.faulty[v] |= uint64_t{1} << family;
  if (std::find(st.faults[v].begin(), st.faults[v].end(), fault) == st.faults[v].end()) st.faults[v].push_back(fault);
}

int64_t FaultBook::BeforeStep(const std::vector<int>& ranks, const std::vector<std::string>& hosts, int replica,
                              int64_t nominal_ns) {
  if (counterfactual_ || p_start_ <= 0) return 0;
  bool enabled = false;
  for (FaultClass c : cfg_.fault_classes) enabled = enabled || c == FaultClass::kSchedDelay;
  if (!enabled) return 0;
  for (int r : ranks) {
    if (active_[r] >= 0 || truth_[r].empty()) return 0;  // a rank is busy, or no previous step
  }
  // One draw per replica step; the scheduler's share of the classes, as BeginStep's per rank.
  if (!rng_.Bernoulli(p_start_ / static_cast<double>(cfg_.fault_classes.size()))) return 0;
  const double intensity = cfg_.intensities[static_cast<size_t>(
      rng_.Int(0, static_cast<int64_t>(cfg_.intensities.size()) - 1))];
  const int64_t base = std::max<int64_t>(90000, nominal_ns / 4);
  const int64_t extra = static_cast<int64_t>((intensity - 1.0) * static_cast<double>(base));
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int idx = NewEntry(FaultClass::kSchedDelay, ranks[i], hosts[i], -1, intensity);
    LedgerEntry& e = ledger_[idx];
    e.target = kFamBetweenSteps;
    e.family = fam_between_;
    e.group = "dp" + std::to_string(replica);
    e.first_step = e.last_step = static_cast<int64_t>(truth_[ranks[i]].size());  // the next step
    e.end = -1;
    e.open = false;
    e.steps_left = 1;
    active_[ranks[i]] = idx;
  }
  return extra;
}

void FaultBook::SchedWait(int rank, int64_t start, int64_t end) {
  if (counterfactual_) return;
  const int a = active_[rank];
  if (a < 0 || ledger_[a].cls != FaultClass::kSchedDelay) return;
  ledger_[a].start = start;
  ledger_[a].end = end;
  Hit(rank, a, fam_between_, false);
}

int64_t FaultBook::PlannedGap(FaultClass cls, int rank, int64_t nominal_ns, double* where, int* fault) const {
  const int a = active_[rank];
  if (a < 0 || counterfactual_) return 0;
  const LedgerEntry& e = ledger_[a];
  if (e.cls != cls || e.start >= 0) return 0;
  *where = e.gap_frac;
  *fault = a;
  return static_cast<int64_t>((e.intensity - 1.0) * 0.25 * static_cast<double>(nominal_ns)) + 1000;
}

void FaultBook::SetWindow(int fault, int64_t start, int64_t end) {
  if (counterfactual_ || fault < 0) return;
  ledger_[fault].start = start;
  ledger_[fault].end = end;
}

double FaultBook::DirectCopyFactor(int rank, int64_t gpu_start, int* fault) const {
  const int a = active_[rank];
  if (a < 0 || counterfactual_) return 1.0;
  const LedgerEntry& e = ledger_[a];
  const bool hit = e.cls == FaultClass::kDirectCopy || (e.cls == FaultClass::kContention && InWindow(e, gpu_start));
  if (!hit) return 1.0;
  *fault = a;
  return e.intensity;
}

void FaultBook::SetStepCost(int rank, int64_t cost_ns, int64_t cf_ns) {
  if (truth_[rank].empty()) return;
  StepTruth& st = truth_[rank].back();
  st.cost_ns = std::max<int64_t>(0, cost_ns);
  st.cf_ns = cf_ns;
  st.absorbed = static_cast<double>(st.cost_ns) < cfg_.label_min_cost_share * static_cast<double>(cf_ns);
  st.transfer_absorbed = static_cast<double>(std::min(st.cost_ns, st.transfer_cost_ns)) <
                         cfg_.label_min_cost_share * static_cast<double>(cf_ns);
}

void FaultBook::AddTransferCost(int rank, int64_t added_ns, int64_t step) {
  if (counterfactual_ || truth_[rank].empty()) return;
  StepTruth& st = step >= 0 && step < static_cast<int64_t>(truth_[rank].size()) ? truth_[rank][static_cast<size_t>(step)]
                                                                                 : truth_[rank].back();
  st.transfer_cost_ns += std::max<int64_t>(0, added_ns);
}

}  // namespace truffld::synth
