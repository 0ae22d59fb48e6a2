// A replica's engine-step loop and the costing of faulty steps (see simulator.h). The loop asks
// the replica's scheduler for each step, holds the replica when a sched_delay fault is planned,
// and runs the step on every stage until --steps or the record budget is reached. Labels are by
// cost: a step that a labelling fault touched is re-simulated from a Snapshot taken before it,
// with the same random draws, every fault off and the writers discarding records; each rank's
// range-pop difference is what the faults cost the step. The real state is then restored.
#include <algorithm>
#include <climits>
#include <string>
#include <unordered_set>
#include <vector>

#include "sim_rank.h"
#include "truffld/synth/record_writer.h"
#include "truffld/synth/simulator.h"
#include "truffld/synth/workload.h"

namespace truffld::synth {
namespace {

// The step range's name as truffld's hooks write it, with the tags the config keeps.
std::string TaggedStepName(const SynthConfig& cfg, const PlannedStep& ps) {
  StepTags tags;
  if (cfg.phase_tags) tags.phase = ps.phase;
  if (cfg.workload_tags) {
    tags.tokens = ps.tokens;
    tags.context = ps.context;
  }
  return JsonEscape(StepRangeName(ps.request_ids, tags));
}

}  // namespace

void Simulator::Snapshot::Save(const std::vector<Group>& stages) {
  ranks.resize(stages.size());
  groups.clear();
  for (size_t s = 0; s < stages.size(); ++s) {
    ranks[s].clear();
    for (const Rank& rk : stages[s].ranks) ranks[s].push_back(rk.Save());
    groups.push_back(GroupState{stages[s].rng, stages[s].gs, stages[s].pop_ts});
  }
}

void Simulator::Snapshot::Restore(std::vector<Group>& stages) const {
  for (size_t s = 0; s < stages.size(); ++s) {
    for (size_t i = 0; i < stages[s].ranks.size(); ++i) stages[s].ranks[i].Restore(ranks[s][i]);
    stages[s].rng = groups[s].rng;
    stages[s].gs = groups[s].gs;
    stages[s].pop_ts = groups[s].pop_ts;
  }
}

int64_t Simulator::RunSteps(int replica, std::vector<Group>& stages) {
  const int pp = cfg_.pp;
  Scheduler sched(cfg_.seed, replica, cfg_.workload == "online", cfg_.arrivals_per_step, cfg_.max_num_seqs,
                  cfg_.max_prefill_tokens, cfg_.prompt_scale, cfg_.chunked_prefill);
  const uint64_t budget = static_cast<uint64_t>(cfg_.target_events / std::max(1, cfg_.hosts)) * pp;
  bool sched_faults = false;
  for (FaultClass c : cfg_.fault_classes) sched_faults = sched_faults || c == FaultClass::kSchedDelay;
  std::vector<Op> ops;
  std::unordered_set<std::string> requests;
  int64_t done = INT64_MIN;  // pp > 1: reference time at which the last stage finished the previous step
  Snapshot before;
  std::vector<size_t> captured;
  std::vector<std::vector<int64_t>> first_push(stages.size());  // --slow-host's ledger window
  for (int64_t step = 0; step < 50000000; ++step) {
    uint64_t records = 0;
    for (const Group& g : stages) records += g.Records();
    if (cfg_.steps > 0 ? step >= cfg_.steps : (step >= 2 && records >= budget)) break;
    PlannedStep ps = sched.Next();
    requests_.OnStep(replica, step, ps);
    for (const auto& id : ps.request_ids) requests.insert(id);
    const std::string step_name = TaggedStepName(cfg_, ps);
    const int64_t hits0 = faults_->hits();
    const int64_t done0 = done;
    before.Save(stages);
    if (sched_faults) DelaySchedule(stages, ps, replica, &ops);
    captured.clear();
    RunStep(stages, ps, step_name, ops, &done, &captured);
    for (size_t s = 0; s < stages.size(); ++s) {
      if (first_push[s].empty()) first_push[s] = stages[s].gs.push_ts;
    }
    if (faults_->hits() == hits0) continue;
    CostStep(stages, ps, step_name, ops, before, done0, &done, captured);
  }
  for (Group& g : stages) faults_->Finish(g.rank_ids, g.pop_ts);
  for (size_t s = 0; s < stages.size(); ++s) NoteSlowHost(stages[s], first_push[s]);
  return static_cast<int64_t>(requests.size());
}

void Simulator::DelaySchedule(std::vector<Group>& stages, const PlannedStep& ps, int replica, std::vector<Op>* ops) {
  std::vector<int> replica_ranks;
  std::vector<std::string> replica_hosts;
  for (const Group& g : stages) {
    replica_ranks.insert(replica_ranks.end(), g.rank_ids.begin(), g.rank_ids.end());
    replica_hosts.insert(replica_hosts.end(), g.hosts.begin(), g.hosts.end());
  }
  BuildStepProgram(cat_, dims_, ps.shape, ops, stages[0].stage);
  ScaleDevice(ops, stages[0].host);
  int64_t nominal = 0;
  for (const Op& op : *ops) {
    for (int k = 0; k < op.nwork; ++k) nominal += op.work[k].nominal_ns;
  }
  const int64_t extra = faults_->BeforeStep(replica_ranks, replica_hosts, replica, nominal);
  for (Group& g : stages) {
    for (Rank& rk : g.ranks) rk.sched_extra = extra;
  }
}

void Simulator::CostStep(std::vector<Group>& stages, const PlannedStep& ps, const std::string& step_name,
                         std::vector<Op>& ops, const Snapshot& before, int64_t done_before, int64_t* done,
                         const std::vector<size_t>& captured) {
  std::vector<std::vector<int64_t>> real_pop(stages.size());
  for (size_t s = 0; s < stages.size(); ++s) real_pop[s] = stages[s].pop_ts;
  Snapshot after;
  after.Save(stages);
  const int64_t done_after = *done;
  before.Restore(stages);
  *done = done_before;
  for (size_t s : captured) {  // the counterfactual captures the graph again, unwritten
    for (Rank& rk : stages[s].ranks) rk.graphs.erase(ps.graph_bucket);
  }
  for (Group& g : stages) {
    for (Rank& rk : g.ranks) rk.w->set_discard(true);
  }
  faults_->set_counterfactual(true);
  RunStep(stages, ps, step_name, ops, done, nullptr);
  faults_->set_counterfactual(false);
  for (size_t s = 0; s < stages.size(); ++s) {
    Group& g = stages[s];
    for (size_t i = 0; i < g.ranks.size(); ++i) {
      g.ranks[i].w->set_discard(false);
      faults_->SetStepCost(g.ranks[i].rank, real_pop[s][i] - g.pop_ts[i], g.pop_ts[i] - g.gs.push_ts[i]);
    }
  }
  after.Restore(stages);
  *done = done_after;
}

}  // namespace truffld::synth
