// report.html overview: a heat map of (view, rank) rows x step bins counting abnormal units,
// and the per-unit label strips the script draws step by step on demand (see html_report.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "report/html_report_parts.h"

namespace truffld::diagnose::report {
namespace {

constexpr int64_t kMaxColumns = 150;
constexpr int64_t kMaxStripSteps = 200000;  // longer ranges: no step-by-step strip
constexpr int64_t kMaxOverviewSpan = int64_t{1} << 40;  // wider step ranges: no heatmap
constexpr double kLeft = 120, kRowH = 14, kWidth = 900;

struct Bin {
  int units = 0, abnormal = 0, insufficient = 0;
  double top = -1;
  size_t top_unit = 0;
};

// Row key: vertical before horizontal, then rank (unknown rank last).
using RowKey = std::pair<int, std::pair<bool, int64_t>>;
RowKey KeyOf(const StepEvidence& e) {
  return {ViewIndex(e.view), {!e.rank.has_value(), e.rank.value_or(0)}};
}
std::string RowRank(const RowKey& k) { return k.second.first ? "x" : std::to_string(k.second.second); }

std::string Fill(const Bin& b) {
  if (b.abnormal == 0) return "url(#hatch)";
  const double share = static_cast<double>(b.abnormal) / std::max(1, b.units);
  const int level = std::clamp(static_cast<int>(std::ceil(share * kViridisSteps)) - 1, 0, kViridisSteps - 1);
  return kViridis[level];
}

std::string Legend() {
  std::string h = "<p class='muted'>Colour: share of the bin's units found abnormal";
  for (int i = 0; i < kViridisSteps; ++i) {
    h += "<span class='sw' style='background:" + std::string(kViridis[i]) + "'></span>&le;" +
         std::to_string((i + 1) * 100 / kViridisSteps) + "%";
  }
  return h + "<span class='sw' style='background:" + std::string(kGrey) +
         "'></span>none abnormal<span class='sw' "
         "style='background:repeating-linear-gradient(45deg,#fff,#fff 2px,#777 2px,#777 3px)'>"
         "</span>none abnormal, some could not be judged</p>";
}

// Step-by-step strips for the script: one line per row, one letter per step (n normal,
// a abnormal, i insufficient evidence, . no unit). Only generated text, never names.
std::string Strips(const std::vector<StepDiagnosis>& d, int64_t lo, int64_t hi) {
  const int64_t span = hi - lo + 1;
  std::string h = "<div id='zoom' hidden data-span='" + std::to_string(std::min<int64_t>(span, 120)) +
       "'><p><button type='button' data-z='-1'>&larr; earlier</button> <span id='zoom-range'></span> "
       "<button type='button' data-z='1'>later &rarr;</button> <span class='muted'>Colour: "
       "<span class='sw' style='background:" + std::string(kVermillion) + "'></span>abnormal (links to its card)"
       "<span class='sw' style='background:" + kSky + "'></span>insufficient evidence"
       "<span class='sw' style='background:" + kGrey + "'></span>normal</span></p>"
       "<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'></svg></div>"
       "<pre id='unit-labels' hidden data-lo='" + std::to_string(lo) + "' data-hi='" + std::to_string(hi) + "'>";
  std::map<RowKey, std::string> strips;
  for (const StepDiagnosis& s : d) {
    std::string& labels = strips[KeyOf(s.evidence)];
    if (labels.empty()) labels.assign(static_cast<size_t>(span), '.');
    labels[static_cast<size_t>(s.evidence.step_index - lo)] =
        s.abnormal ? 'a' : s.label == Verdict::kInsufficient ? 'i' : 'n';
  }
  for (const auto& [key, labels] : strips) {
    h += std::string(key.first ? "h " : "v ") + RowRank(key) + " " + std::to_string(lo) + " " + labels + "\n";
  }
  return h + "</pre>";
}

}  // namespace

std::string RenderOverview(const std::vector<StepDiagnosis>& d, const CardPlan& plan) {
  std::string h = "<h2 id='overview'>Overview</h2>";
  if (d.empty()) return h + "<p>No units.</p>";
  int64_t lo = d[0].evidence.step_index, hi = lo;
  for (const StepDiagnosis& s : d) {
    lo = std::min(lo, s.evidence.step_index);
    hi = std::max(hi, s.evidence.step_index);
  }
  // Step indices come from the trees: a range wider than any run (hi - lo computed unsigned, so
  // it cannot overflow) gets no heatmap rather than overflowing the bin arithmetic below.
  if (static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) >= static_cast<uint64_t>(kMaxOverviewSpan)) {
    return h + "<p>Steps " + std::to_string(lo) + " to " + std::to_string(hi) + ": too wide a range to draw.</p>";
  }
  const int64_t span = hi - lo + 1;
  const int64_t per_bin = std::max<int64_t>(1, (span + kMaxColumns - 1) / kMaxColumns);
  const int64_t columns = (span + per_bin - 1) / per_bin;
  std::map<RowKey, std::map<int64_t, Bin>> rows;
  for (size_t u = 0; u < d.size(); ++u) {
    const StepEvidence& e = d[u].evidence;
    Bin& b = rows[KeyOf(e)][(e.step_index - lo) / per_bin];
    ++b.units;
    b.insufficient += d[u].label == Verdict::kInsufficient;
    if (!d[u].abnormal) continue;
    ++b.abnormal;
    if (Impact(d[u]) > b.top) { b.top = Impact(d[u]); b.top_unit = u; }
  }
  const double cell = std::clamp(kWidth / static_cast<double>(columns), 3.0, 16.0);
  const double width = kLeft + cell * static_cast<double>(columns) + 10;
  int view_changes = 0;
  for (auto it = rows.begin(); it != rows.end(); ++it) {
    if (it != rows.begin() && it->first.first != std::prev(it)->first.first) ++view_changes;
  }
  const double height = kRowH * static_cast<double>(rows.size()) + 12.0 * view_changes + 34;
  h += "<p>Rows: one per rank and view; columns: bins of " + std::to_string(per_bin) + " step" +
       (per_bin == 1 ? "" : "s") + ". A coloured cell links to the bin's highest-impact abnormal unit; "
       "with JavaScript a click shows the bin's steps one by one below.</p>" + Legend();
  h += "<svg id='heatmap' xmlns='http://www.w3.org/2000/svg' width='" + Num(width, 0) + "' height='" + Num(height, 0) +
       "' data-lo='" + std::to_string(lo) + "' data-per-bin='" + std::to_string(per_bin) + "'>"
       "<defs><pattern id='hatch' width='4' height='4' patternUnits='userSpaceOnUse' patternTransform='rotate(45)'>"
       "<rect width='4' height='4' fill='#fff'/><line x1='0' y1='0' x2='0' y2='4' stroke='#777' stroke-width='1.5'/>"
       "</pattern></defs>";
  double y = 4;
  int last_view = -1;
  for (const auto& [key, bins] : rows) {
    if (last_view >= 0 && key.first != last_view) y += 12;
    last_view = key.first;
    h += "<text x='4' y='" + Num(y + 11) + "' font-size='11'>" + std::string(key.first ? "horizontal" : "vertical") +
         " rank " + (key.second.first ? "-" : std::to_string(key.second.second)) + "</text>"
         "<rect x='" + Num(kLeft) + "' y='" + Num(y) + "' width='" + Num(cell * static_cast<double>(columns)) +
         "' height='" + Num(kRowH - 2) + "' fill='" + kGrey + "'/>";
    for (const auto& [col, b] : bins) {
      if (b.abnormal == 0 && b.insufficient == 0) continue;
      const int64_t first = lo + col * per_bin;
      const std::string title = "<title>" + std::string(key.first ? "horizontal" : "vertical") + " rank " +
                                RowRank(key) + ", steps " + std::to_string(first) + "-" +
                                std::to_string(first + per_bin - 1) + ": " + std::to_string(b.abnormal) +
                                " abnormal, " + std::to_string(b.insufficient) + " not judged, of " +
                                std::to_string(b.units) + "</title>";
      const std::string rect = "<rect x='" + Num(kLeft + cell * static_cast<double>(col)) + "' y='" + Num(y) +
                               "' width='" + Num(std::max(1.0, cell - 0.6)) + "' height='" + Num(kRowH - 2) +
                               "' fill='" + Fill(b) + "'>" + title + "</rect>";
      h += b.abnormal
               ? "<a href='#" + plan.ids[b.top_unit] + "' data-s='" + std::to_string(first) + "'>" + rect + "</a>"
               : rect;
    }
    y += kRowH;
  }
  for (int t = 0; t <= 5; ++t) {
    const int64_t step = lo + (span - 1) * t / 5;
    const double x = kLeft + cell * static_cast<double>(t == 5 ? columns : (step - lo) / per_bin);
    h += "<text x='" + Num(x) + "' y='" + Num(y + 16) + "' font-size='10'" + (t == 5 ? " text-anchor='end'" : "") +
         ">" + std::to_string(step) + "</text>";
  }
  h += "<text x='4' y='" + Num(y + 16) + "' font-size='10'>step</text></svg>";
  return span > kMaxStripSteps ? h : h + Strips(d, lo, hi);
}

}  // namespace truffld::diagnose::report
