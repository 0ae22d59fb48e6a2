// FormatStatsText (see stats_format.h).
#include "stats_format.h"

#include <algorithm>
#include <cstdio>

#include "peer/format_ns.h"
#include "truffld/terminal_text.h"

namespace truffld::exporter {

namespace {

std::string Pct(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * share);
  return buf;
}
std::string Ns(double ns) { return diagnose::FormatNs(ns); }
std::string Rank(const std::optional<int64_t>& r) { return r ? std::to_string(*r) : "-"; }

std::string KernelTable(const RunStats& s, size_t top) {
  std::vector<std::vector<std::string>> rows;
  for (const KernelSummary& k : s.kernel_summary) {
    if (top && rows.size() == top) break;
    rows.push_back({Pct(k.share), Ns(k.total_ns), std::to_string(k.count), Ns(k.avg_ns), Ns(k.min_ns), Ns(k.max_ns),
                    TruncateForDisplay(EscapeForTerminal(k.name), 60)});
  }
  std::string out = "Kernel time summary (" + std::to_string(s.kernels) + " kernels, " + Ns(s.kernel_total_ns) +
                    ", " + std::to_string(s.kernel_summary.size()) + " names";
  if (top && s.kernel_summary.size() > top) out += ", top " + std::to_string(top) + " shown";
  out += ")\n";
  return out + FormatTable({"share", "total", "count", "avg", "min", "max", "name"}, rows,
                           {true, true, true, true, true, true, false});
}

std::string IdleTables(const RunStats& s, size_t top) {
  std::vector<std::vector<std::string>> rows;
  for (const RankIdle& r : s.rank_idle) {
    rows.push_back({Rank(r.rank), std::to_string(r.steps), Ns(r.duration_ns), Ns(r.busy_ns), Pct(r.idle_share),
                    Pct(r.min_step_idle), Pct(r.max_step_idle)});
  }
  std::string out = "GPU idle share per step, by rank (kernels, copies and memsets within the step)\n";
  out += FormatTable({"rank", "steps", "step time", "GPU busy", "idle", "min step", "max step"}, rows,
                     std::vector<bool>(7, true));
  std::vector<StepIdle> idlest = s.step_idle;
  std::stable_sort(idlest.begin(), idlest.end(),
                   [](const StepIdle& a, const StepIdle& b) { return a.idle_share > b.idle_share; });
  if (top && idlest.size() > top) idlest.resize(top);
  rows.clear();
  for (const StepIdle& st : idlest) {
    rows.push_back({Rank(st.rank), std::to_string(st.step_index), Ns(st.duration_ns), Ns(st.busy_ns),
                    Pct(st.idle_share)});
  }
  out += "\nIdlest steps (" + std::to_string(idlest.size()) + " of " + std::to_string(s.step_idle.size()) + ")\n";
  return out + FormatTable({"rank", "step", "duration", "GPU busy", "idle"}, rows, std::vector<bool>(5, true));
}

std::string LatencyTable(const RunStats& s) {
  std::vector<std::vector<std::string>> rows;
  for (const LaunchLatency& l : s.launch_latency) {
    rows.push_back({EscapeForTerminal(l.api), std::to_string(l.count), Ns(l.min_ns), Ns(l.p50_ns), Ns(l.p90_ns),
                    Ns(l.p99_ns), Ns(l.max_ns), Ns(l.p50_after_end_ns)});
  }
  return "Launch latency (API call start -> kernel start; last column: from the call's end)\n" +
         FormatTable({"launch API", "kernels", "min", "p50", "p90", "p99", "max", "p50 from end"}, rows,
                     {false, true, true, true, true, true, true, true});
}

std::string OverlapTable(const RunStats& s) {
  std::vector<std::vector<std::string>> rows;
  for (const RankOverlap& r : s.overlap) {
    rows.push_back({Rank(r.rank), Ns(r.compute_ns), Ns(r.comm_ns), Ns(r.overlap_ns),
                    r.comm_ns > 0 ? Pct(r.overlap_share) : "-"});
  }
  return "Compute/communication overlap per rank (comm kernel time during compute kernels)\n" +
         FormatTable({"rank", "compute busy", "comm busy", "overlap", "of comm"}, rows, std::vector<bool>(5, true));
}

}  // namespace

std::string FormatTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                        const std::vector<bool>& right) {
  std::vector<size_t> w(header.size(), 0);
  auto widen = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], DisplayWidth(r[i]));
  };
  widen(header);
  for (const auto& r : rows) widen(r);
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    std::string l;
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) {
      const std::string pad(w[i] - std::min(w[i], DisplayWidth(r[i])), ' ');
      if (i) l += "  ";
      l += right[i] ? pad + r[i] : (i + 1 == r.size() ? r[i] : r[i] + pad);
    }
    out += l + "\n";
  };
  line(header);
  if (rows.empty()) out += "(none)\n";
  for (const auto& r : rows) line(r);
  return out;
}

std::string FormatStatsText(const RunStats& s, const TextOptions& o) {
  return KernelTable(s, o.top_kernels) + "\n" + IdleTables(s, o.top_idle) + "\n" + LatencyTable(s) + "\n" +
         OverlapTable(s);
}

}  // namespace truffld::exporter
