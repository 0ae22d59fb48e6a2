// DeviceWindows: see device_windows.h.
#include "device_windows.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace truffld::inject {

namespace {

bool ParseCount(std::string_view s, uint64_t* out) {
  uint64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v == 0) return false;
  *out = v;
  return true;
}

// Splits "a:b:c" into its fields.
std::vector<std::string_view> Fields(std::string_view s) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t c = s.find(':');
    out.push_back(s.substr(0, c));
    if (c == std::string_view::npos) return out;
    s.remove_prefix(c + 1);
  }
}

// A percentage in (0, 100]: plain decimal digits with at most one point.
bool ParsePercent(std::string_view s, double* out) {
  if (s.empty() || s.size() > 16 || s.find_first_not_of("0123456789.") != std::string_view::npos ||
      s.find('.') != s.rfind('.'))
    return false;
  const std::string text(s);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !(v > 0) || v > 100) return false;
  *out = v;
  return true;
}

// kCost: the shortest period windows of m steps may have (two windows never touch).
uint64_t CostMinPeriod(uint64_t m) { return std::max(kCostMinPeriod, std::bit_ceil(2 * m)); }

}  // namespace

bool ParseWindowPlan(std::string_view text, WindowPlan* plan, std::string* why) {
  WindowPlan p;
  const auto f = Fields(text);
  if (text == "all") {
    p.mode = WindowPlan::Mode::kAll;
  } else if (text == "off") {
    p.mode = WindowPlan::Mode::kOff;
  } else if (text == "requested") {
    p.mode = WindowPlan::Mode::kRequested;
  } else if (f[0] == "steps" && (f.size() == 2 || f.size() == 3)) {
    p.mode = WindowPlan::Mode::kSteps;
    if (!ParseCount(f[1], &p.every_steps) || (f.size() == 3 && !ParseCount(f[2], &p.window_steps))) {
      *why = "steps:N[:M] needs whole numbers N, M >= 1";
      return false;
    }
    if (p.window_steps > p.every_steps) {
      *why = "steps:N:M needs M <= N";
      return false;
    }
  } else if (f[0] == "time" && f.size() == 3) {
    p.mode = WindowPlan::Mode::kTime;
    uint64_t on = 0, period = 0;
    if (!ParseCount(f[1], &on) || !ParseCount(f[2], &period) || on > period || period > 86400000) {
      *why = "time:ON:PERIOD needs milliseconds 1 <= ON <= PERIOD <= 86400000";
      return false;
    }
    p.on_ns = static_cast<int64_t>(on) * 1000000;
    p.period_ns = static_cast<int64_t>(period) * 1000000;
  } else if (f[0] == "cost" && (f.size() == 2 || f.size() == 3)) {
    p.mode = WindowPlan::Mode::kCost;
    if (!ParsePercent(f[1], &p.cost_percent) || (f.size() == 3 && !ParseCount(f[2], &p.window_steps)) ||
        p.window_steps > kCostMaxPeriod / 2) {
      *why = "cost:PCT[:M] needs a percentage 0 < PCT <= 100 and whole steps 1 <= M <= " +
             std::to_string(kCostMaxPeriod / 2);
      return false;
    }
  } else {
    *why = "not all, off, requested, steps:N[:M], time:ON_MS:PERIOD_MS or cost:PCT[:M]";
    return false;
  }
  p.slow_factor = plan->slow_factor;
  p.request_steps = plan->request_steps;
  p.trigger_budget = plan->trigger_budget;
  *plan = p;
  return true;
}

std::string DescribeWindowPlan(const WindowPlan& p) {
  switch (p.mode) {
    case WindowPlan::Mode::kAll: return "all";
    case WindowPlan::Mode::kOff: return "off";
    case WindowPlan::Mode::kRequested: return "requested";
    case WindowPlan::Mode::kSteps:
      return "steps:" + std::to_string(p.every_steps) + ":" + std::to_string(p.window_steps);
    case WindowPlan::Mode::kTime:
      return "time:" + std::to_string(p.on_ns / 1000000) + ":" + std::to_string(p.period_ns / 1000000);
    case WindowPlan::Mode::kCost: {
      char pct[32];
      std::snprintf(pct, sizeof pct, "%g", p.cost_percent);
      return "cost:" + std::string(pct) + ":" + std::to_string(p.window_steps);
    }
  }
  return "all";
}

std::vector<std::string> SplitPrefixes(std::string_view text) {
  std::vector<std::string> out;
  for (;;) {
    const size_t c = text.find(',');
    const std::string_view p = text.substr(0, c);
    if (!p.empty()) out.emplace_back(p);
    if (c == std::string_view::npos) return out;
    text.remove_prefix(c + 1);
  }
}

bool HasPrefix(const std::vector<std::string>& prefixes, std::string_view name) {
  for (const auto& p : prefixes)
    if (name.substr(0, p.size()) == p) return true;
  return false;
}

bool DeviceWindows::InTimeWindow(int64_t now_ns) const {
  int64_t phase = (now_ns - start_ns_) % plan_.period_ns;
  if (phase < 0) phase += plan_.period_ns;
  return phase < plan_.on_ns;
}

bool DeviceWindows::Planned(int64_t now_ns) const {
  switch (plan_.mode) {
    case WindowPlan::Mode::kSteps:
    case WindowPlan::Mode::kCost: return steps_begun_ % period() < plan_.window_steps;
    case WindowPlan::Mode::kTime: return InTimeWindow(now_ns);
    default: return false;
  }
}

int64_t DeviceWindows::NextTimeEdgeIn(int64_t now_ns) const {
  if (plan_.mode != WindowPlan::Mode::kTime) return -1;
  int64_t phase = (now_ns - start_ns_) % plan_.period_ns;
  if (phase < 0) phase += plan_.period_ns;
  return phase < plan_.on_ns ? plan_.on_ns - phase : plan_.period_ns - phase;
}

bool DeviceWindows::Switch(bool open, Trigger why, Edge* edge) {
  if (open == open_) return false;
  open_ = open;
  if (open) open_why_ = why;
  edge->open = open;
  edge->index = open ? windows_++ : windows_ - 1;
  edge->trigger = open || why == Trigger::kExit ? why : open_why_;
  return true;
}

bool DeviceWindows::Request(Trigger why) {
  if (!plan_.sampled() || pending_) return false;
  const bool budgeted = why == Trigger::kSlowStep || why == Trigger::kSlowCollective;
  if (budgeted && plan_.trigger_budget < 1) {
    const double cost = static_cast<double>(plan_.request_steps);
    if (credit_ + 1e-9 < cost) {  // (the tolerance absorbs the budget's rounding over many steps)
      ++triggers_refused_;
      return false;
    }
    credit_ = std::max(0.0, credit_ - cost);
  }
  pending_ = true;
  pending_why_ = why;
  return true;
}

bool DeviceWindows::StepBegin(int64_t now_ns, Edge* edge) {
  if (open_steps_++ > 0 || !plan_.sampled()) return false;  // a step is already in progress
  const bool planned = Planned(now_ns);
  const Trigger why = plan_.mode == WindowPlan::Mode::kTime ? Trigger::kTime : Trigger::kStep;
  ++steps_begun_;
  credit_ = std::min(static_cast<double>(plan_.request_steps), credit_ + plan_.trigger_budget);
  if (pending_) {  // a requested window covers this step and the next ones
    pending_ = false;
    requested_left_ = plan_.request_steps;
    return Switch(true, pending_why_, edge);  // no edge when a window is open already
  }
  if (requested_left_ > 0) return false;  // held open by a request
  return Switch(planned, why, edge);
}

void DeviceWindows::CollectiveEnd(uint32_t cls, int64_t duration_ns) {
  if (cls == SlowSteps::kNoClass || !plan_.sampled()) return;
  if (slow_comm_.Add(cls, duration_ns) && !open_ && !pending_) Request(Trigger::kSlowCollective);
}

bool DeviceWindows::StepEnd(int64_t now_ns, Edge* edge, StepSample sample) {
  if (open_steps_ == 0) return false;
  if (plan_.mode == WindowPlan::Mode::kCost && open_ && open_why_ == Trigger::kStep && requested_left_ == 0)
    MeasureCostStep(sample);
  // Every step is measured; a slow one asks for a window unless one is open (it then has its
  // detail already) or requested.
  if (sample.duration_ns >= 0 && plan_.sampled() && slow_.Add(sample.phase, sample.duration_ns) &&
      !open_ && !pending_) {
    Request(Trigger::kSlowStep);
  }
  if (--open_steps_ > 0 || !open_) return false;
  if (requested_left_ > 0 && --requested_left_ > 0) return false;
  if (pending_) return false;  // a request opens (holds) the window at the next step
  if (Planned(now_ns)) return false;  // the next step is planned too: the window stays open
  const Trigger why = open_why_;
  if (!Switch(false, why, edge)) return false;
  if (plan_.mode == WindowPlan::Mode::kCost) {
    if (why == Trigger::kStep) FinishCostWindow();
    cost_excess_ = 0;
    cost_measured_ = 0;
  }
  return true;
}

void DeviceWindows::MeasureCostStep(const StepSample& sample) {
  if (sample.duration_ns < 0 || slow_.Known(sample.phase) < kSlowMinHistory) return;
  const int64_t median = slow_.Median(sample.phase);
  if (median <= 0) return;
  cost_excess_ += static_cast<double>(sample.duration_ns - median) / static_cast<double>(median);
  ++cost_measured_;
}

void DeviceWindows::FinishCostWindow() {
  if (cost_measured_ < plan_.window_steps) return;  // a step without history: not a measurement
  cost_recent_[cost_windows_++ % kCostHistory] = std::max(0.0, cost_excess_);
  const size_t n = std::min(cost_windows_, kCostHistory);
  double sorted[kCostHistory];
  std::copy(cost_recent_, cost_recent_ + n, sorted);
  std::sort(sorted, sorted + n);
  const double excess = sorted[(n - 1) / 2];  // the median (the lower one of two)
  // The period P keeps excess / P median steps within cost_percent % of the run.
  const double want = std::ceil(excess * 100.0 / plan_.cost_percent);
  const uint64_t lo = CostMinPeriod(plan_.window_steps);
  cost_period_ = want >= static_cast<double>(kCostMaxPeriod)
                     ? kCostMaxPeriod
                     : std::max(lo, std::bit_ceil(static_cast<uint64_t>(std::max(1.0, want))));
}

bool DeviceWindows::Tick(int64_t now_ns, Edge* edge) {
  if (plan_.mode != WindowPlan::Mode::kTime || open_steps_ > 0) return false;
  if (requested_left_ > 0 || pending_) return false;  // a request decides at the next step
  return Switch(InTimeWindow(now_ns), Trigger::kTime, edge);
}

bool DeviceWindows::Finish(Edge* edge) { return Switch(false, Trigger::kExit, edge); }

void DeviceWindows::Reset(int64_t start_ns) {
  start_ns_ = start_ns;
  open_steps_ = 0;
  steps_begun_ = 0;
  windows_ = 0;
  open_ = false;
  pending_ = false;
  requested_left_ = 0;
  credit_ = static_cast<double>(plan_.request_steps);
  triggers_refused_ = 0;
  cost_period_ = std::max(kCostStartPeriod, CostMinPeriod(plan_.window_steps));
  cost_excess_ = 0;
  cost_measured_ = 0;
  cost_windows_ = 0;
  slow_.Reset();
  slow_comm_.Reset();
}

}  // namespace truffld::inject
