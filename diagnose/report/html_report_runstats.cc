// report.html's "Run statistics" section (html_report_parts.h): the merge's run_stats.json, the
// summaries users know from `nsys stats` and Holistic Trace Analysis.
#include <algorithm>

#include "peer/format_ns.h"
#include "report/html_report_parts.h"

namespace truffld::diagnose::report {
namespace {

constexpr size_t kKernelsListed = 10, kIdlestListed = 5, kApisListed = 8, kNameChars = 120;

std::string RankCell(const std::optional<int64_t>& r) { return r ? std::to_string(*r) : std::string("-"); }
std::string Ns(double ns) { return FormatNs(ns); }

std::string Cells(const std::vector<std::string>& cells) {
  std::string h = "<tr>";
  for (const std::string& c : cells) h += "<td>" + c + "</td>";
  return h + "</tr>";
}

std::string Header(const std::vector<const char*>& names) {
  std::string h = "<table><tr>";
  for (const char* n : names) h += std::string("<th>") + n + "</th>";
  return h + "</tr>";
}

// A kernel name, cut for the table with the whole name in its title.
std::string KernelName(const std::string& name) {
  const std::string shown = name.size() > kNameChars ? name.substr(0, kNameChars) + "…" : name;
  return "<code title='" + HtmlEscape(name) + "'>" + HtmlEscape(shown) + "</code>";
}

std::string KernelTable(const RunStats& s) {
  std::string h = "<h3>Kernel time</h3><p>" + std::to_string(s.kernels) + " kernels, " + Ns(double(s.kernel_total_ns)) +
                  " in all, " + std::to_string(s.kernel_summary.size()) + " names";
  if (s.kernel_summary.size() > kKernelsListed) h += " (the " + std::to_string(kKernelsListed) + " costliest below)";
  h += ".</p>" + Header({"share", "total", "count", "avg", "min", "max", "kernel"});
  for (size_t i = 0; i < s.kernel_summary.size() && i < kKernelsListed; ++i) {
    const KernelSummary& k = s.kernel_summary[i];
    h += Cells({Pct(k.share), Ns(double(k.total_ns)), std::to_string(k.count), Ns(k.avg_ns), Ns(double(k.min_ns)),
                Ns(double(k.max_ns)), KernelName(k.name)});
  }
  return h + "</table>";
}

std::string IdleTables(const RunStats& s) {
  std::string h = "<h3>GPU idle inside steps</h3><p>The share of each step's time in which none of its kernels, "
                  "copies or memsets ran (steps with device detail).</p>" +
                  Header({"rank", "steps", "step time", "GPU busy", "idle", "least idle step", "most idle step"});
  for (const RankIdle& r : s.rank_idle) {
    h += Cells({RankCell(r.rank), std::to_string(r.steps), Ns(double(r.duration_ns)), Ns(double(r.busy_ns)),
                Pct(r.idle_share), Pct(r.min_step_idle), Pct(r.max_step_idle)});
  }
  h += "</table>";
  std::vector<const StepIdle*> idlest;
  for (const StepIdle& st : s.step_idle) idlest.push_back(&st);
  std::stable_sort(idlest.begin(), idlest.end(), [](auto* a, auto* b) { return a->idle_share > b->idle_share; });
  if (idlest.size() > kIdlestListed) idlest.resize(kIdlestListed);
  if (idlest.empty()) return h;
  h += "<p>Idlest steps:</p>" + Header({"rank", "step", "duration", "GPU busy", "idle"});
  for (const StepIdle* st : idlest) {
    h += Cells({RankCell(st->rank), std::to_string(st->step_index), Ns(double(st->duration_ns)),
                Ns(double(st->busy_ns)), Pct(st->idle_share)});
  }
  return h + "</table>";
}

std::string LatencyTable(const RunStats& s) {
  if (s.launch_latency.empty()) return {};
  std::string h = "<h3>Launch latency</h3><p>From the launching API call's start to its kernel's start; the last "
                  "column from the call's end (negative: the kernel began before the call returned).</p>" +
                  Header({"launch API", "kernels", "min", "p50", "p90", "p99", "max", "p50 from the call's end"});
  for (size_t i = 0; i < s.launch_latency.size() && i < kApisListed; ++i) {
    const LaunchLatency& l = s.launch_latency[i];
    h += Cells({"<code>" + HtmlEscape(l.api) + "</code>", std::to_string(l.count), Ns(double(l.min_ns)),
                Ns(double(l.p50_ns)), Ns(double(l.p90_ns)), Ns(double(l.p99_ns)), Ns(double(l.max_ns)),
                Ns(double(l.p50_after_end_ns))});
  }
  return h + "</table>";
}

std::string OverlapTable(const RunStats& s) {
  bool any_comm = false;
  for (const RankOverlap& r : s.overlap) any_comm = any_comm || r.comm_ns > 0;
  if (!any_comm) return {};
  std::string h = "<h3>Compute and communication overlap</h3><p>Per rank: the time communication kernels ran "
                  "while a compute kernel ran, over the communication kernels' busy time.</p>" +
                  Header({"rank", "compute busy", "communication busy", "overlap", "of communication"});
  for (const RankOverlap& r : s.overlap) {
    h += Cells({RankCell(r.rank), Ns(double(r.compute_ns)), Ns(double(r.comm_ns)), Ns(double(r.overlap_ns)),
                r.comm_ns > 0 ? Pct(r.overlap_share) : std::string("-")});
  }
  return h + "</table>";
}

}  // namespace

std::string RenderRunStats(const RunStats& s) {
  if (s.kernels == 0 && s.step_idle.empty()) return {};
  return "<h2 id='run-stats'>Run statistics</h2><p class='muted'>From truffld-merge's run_stats.json: the same "
         "figures as <code>truffld-export --stats</code> computes by SQL.</p>" +
         KernelTable(s) + IdleTables(s) + LatencyTable(s) + OverlapTable(s);
}

}  // namespace truffld::diagnose::report
