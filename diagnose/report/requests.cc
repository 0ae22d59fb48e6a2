// Per-request breakdown (requests.h).
#include "report/requests.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "peer/format_ns.h"
#include "report/root_causes.h"

namespace truffld::diagnose {
namespace {

int64_t RankKey(const std::optional<int64_t>& r) { return r.value_or(INT64_MAX); }

// The lead step overlapping [s, e] most (index into steps), or -1.
int StepOf(const std::vector<const StepDiagnosis*>& steps, int64_t s, int64_t e) {
  int best = -1;
  int64_t most = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const int64_t o = std::min(e, steps[i]->evidence.end_ns) - std::max(s, steps[i]->evidence.start_ns);
    if (o >= 0 && (best < 0 || o > most)) most = o, best = int(i);
  }
  return best;
}

// A request's prefill is the leading run of its steps: a prefill step, or a mixed step that is
// its first (a mixed step decodes the requests it carries from earlier steps and starts new
// ones). After the run, decode and mixed steps decode it; a prefill step then (a recompute after
// preemption) counts as a prefill chunk but does not move the end of its prefill.
void FillTimes(const std::vector<const StepDiagnosis*>& steps, RequestSummary* r) {
  bool leading = true;
  int decode_after = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    const StepEvidence& e = steps[k]->evidence;
    r->steps.push_back(e.step_index);
    r->in_steps_ns += e.end_ns - e.start_ns;
    const bool chunk = e.phase == "prefill" || (e.phase == "mixed" && k == 0);
    if (chunk) {
      ++r->prefill_steps;
      if (leading) r->prefill_end_ns = e.end_ns;
      continue;
    }
    leading = false;
    if (e.phase == "decode" || e.phase == "mixed") {
      ++r->decode_steps;
      decode_after += r->prefill_end_ns && e.start_ns >= *r->prefill_end_ns;
    } else {
      ++r->other_steps;
    }
  }
  r->first_start_ns = steps.front()->evidence.start_ns;
  r->last_end_ns = steps.back()->evidence.end_ns;
  r->between_steps_ns = std::max<int64_t>(0, r->last_end_ns - r->first_start_ns - r->in_steps_ns);
  if (r->prefill_end_ns) r->ttft_ns = *r->prefill_end_ns - r->first_start_ns;
  if (r->prefill_end_ns && decode_after > 0) r->tpot_ns = double(r->last_end_ns - *r->prefill_end_ns) / decode_after;
}

void FillHits(const std::vector<const StepDiagnosis*>& steps, const std::vector<const StepDiagnosis*>& hits,
              RequestSummary* r) {
  std::map<int, double> per_step;  // lead step -> largest impact
  for (const StepDiagnosis* d : hits) {
    RequestHit h{d->evidence.rank, d->evidence.step_index, d->evidence.view, UnitCostNs(*d), {}};
    for (const FaultyOperator& f : d->faulty) h.families.push_back(f.family);
    const int s = StepOf(steps, d->evidence.start_ns, d->evidence.end_ns);
    double& m = per_step[s];
    m = std::max(m, h.impact_ns);
    r->abnormal.push_back(std::move(h));
  }
  for (const auto& [s, v] : per_step) r->impact_ns += v;
}

std::string Reason(const RequestSummary& r) {
  std::string s = "request " + r.id + ": " + std::to_string(r.steps.size()) + " steps";
  if (r.lead_rank) s += " on rank " + std::to_string(*r.lead_rank);
  s += " (" + std::to_string(r.prefill_steps) + " prefill, " + std::to_string(r.decode_steps) + " decode) over " +
       FormatNs(double(r.last_end_ns - r.first_start_ns));
  if (r.ttft_ns) s += "; first token " + FormatNs(double(*r.ttft_ns)) + " after its first step";
  if (r.tpot_ns) s += "; " + FormatNs(*r.tpot_ns) + " per output token";
  s += "; " + FormatNs(double(r.between_steps_ns)) + " between its steps";
  const RequestHit* worst = nullptr;
  for (const RequestHit& h : r.abnormal)
    if (!worst || h.impact_ns > worst->impact_ns) worst = &h;
  if (worst) {
    s += "; step " + std::to_string(worst->step_index) +
         (worst->rank ? " on rank " + std::to_string(*worst->rank) : std::string()) + " added " +
         FormatNs(worst->impact_ns) + (worst->families.empty() ? "" : " (" + worst->families.front() + ")");
    if (r.abnormal.size() > 1) s += ", " + std::to_string(r.abnormal.size()) + " abnormal units in all (" + FormatNs(r.impact_ns) + ")";
  } else {
    s += "; no abnormal step touched it";
  }
  return s;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const size_t lo = size_t(std::floor(pos));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

}  // namespace

std::vector<RequestSummary> SummariseRequests(const std::vector<StepDiagnosis>& d) {
  std::map<std::string, std::map<int64_t, std::vector<const StepDiagnosis*>>> steps;  // id -> rank -> vertical units
  std::map<std::string, std::vector<const StepDiagnosis*>> hits;
  for (const StepDiagnosis& s : d) {
    const std::set<std::string> ids(s.evidence.requests.begin(), s.evidence.requests.end());
    for (const std::string& id : ids) {
      if (s.evidence.view == View::kVertical) steps[id][RankKey(s.evidence.rank)].push_back(&s);
      if (s.label == Verdict::kAbnormal) hits[id].push_back(&s);
    }
  }
  std::vector<RequestSummary> out;
  for (auto& [id, by_rank] : steps) {
    RequestSummary r;
    r.id = id;
    for (const auto& [rank, v] : by_rank)
      if (rank != INT64_MAX) r.ranks.push_back(rank);
    std::vector<const StepDiagnosis*>& lead = by_rank.begin()->second;
    r.lead_rank = lead.front()->evidence.rank;
    std::sort(lead.begin(), lead.end(), [](const StepDiagnosis* a, const StepDiagnosis* b) {
      return a->evidence.start_ns != b->evidence.start_ns ? a->evidence.start_ns < b->evidence.start_ns
                                                          : a->evidence.step_index < b->evidence.step_index;
    });
    FillTimes(lead, &r);
    FillHits(lead, hits[id], &r);
    r.reason = Reason(r);
    out.push_back(std::move(r));
  }
  return out;
}

RequestPercentiles RequestTimePercentiles(const std::vector<RequestSummary>& r) {
  std::vector<double> ttft, tpot;
  for (const RequestSummary& s : r) {
    if (s.ttft_ns) ttft.push_back(double(*s.ttft_ns));
    if (s.tpot_ns) tpot.push_back(*s.tpot_ns);
  }
  RequestPercentiles p;
  p.requests = r.size();
  p.with_ttft = ttft.size();
  p.with_tpot = tpot.size();
  p.ttft_p50 = Quantile(ttft, 0.5), p.ttft_p90 = Quantile(ttft, 0.9), p.ttft_p99 = Quantile(ttft, 0.99);
  p.tpot_p50 = Quantile(tpot, 0.5), p.tpot_p90 = Quantile(tpot, 0.9), p.tpot_p99 = Quantile(tpot, 0.99);
  return p;
}

std::string FormatRequestLine(const std::vector<RequestSummary>& r) {
  const RequestPercentiles p = RequestTimePercentiles(r);
  std::string s = "Requests: " + std::to_string(p.requests);
  if (p.with_ttft) s += "; TTFT p50 " + FormatNs(p.ttft_p50) + ", p99 " + FormatNs(p.ttft_p99);
  if (p.with_tpot) s += "; TPOT p50 " + FormatNs(p.tpot_p50) + ", p99 " + FormatNs(p.tpot_p99);
  return s + " (from each request's first step; requests.jsonl, report.html#requests)\n";
}

nlohmann::json RequestJson(const RequestSummary& r) {
  using nlohmann::json;
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  std::vector<const RequestHit*> top;
  for (const RequestHit& h : r.abnormal) top.push_back(&h);
  std::stable_sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->impact_ns > b->impact_ns; });
  if (top.size() > kMaxHitsListed) top.resize(kMaxHitsListed);
  json hits = json::array();
  for (const RequestHit* hp : top) {
    const RequestHit& h = *hp;
    hits.push_back({{"rank", opt(h.rank)}, {"step_index", h.step_index}, {"view", ViewName(h.view)},
                    {"impact_ns", std::llround(h.impact_ns)}, {"faulty", h.families}});
  }
  return {{"schema", "truffld.requests/1"}, {"request", r.id}, {"lead_rank", opt(r.lead_rank)}, {"ranks", r.ranks},
          {"steps", r.steps}, {"prefill_steps", r.prefill_steps}, {"decode_steps", r.decode_steps},
          {"other_steps", r.other_steps}, {"first_start_ns", r.first_start_ns}, {"last_end_ns", r.last_end_ns},
          {"prefill_end_ns", opt(r.prefill_end_ns)}, {"ttft_ns", opt(r.ttft_ns)},
          {"tpot_ns", r.tpot_ns ? json(std::llround(*r.tpot_ns)) : json(nullptr)}, {"in_steps_ns", r.in_steps_ns},
          {"between_steps_ns", r.between_steps_ns}, {"abnormal_units", r.abnormal.size()}, {"abnormal", hits}, {"impact_ns", std::llround(r.impact_ns)},
          {"reason", r.reason}};
}

}  // namespace truffld::diagnose
