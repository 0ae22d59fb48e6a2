// report.html step-time plot: per rank, each step's duration and the time between it and the
// previous step over the run's time, with the verdicts marked (abnormal points link to their
// card or index entry). Steps are binned to pixel columns (the longest value and the worst
// verdict of each column), so the plot's size is bounded by its width, not by the steps.
#include <algorithm>
#include <cmath>
#include <map>

#include "report/html_report_parts.h"

namespace truffld::diagnose::report {
namespace {

constexpr double kLeft = 110, kPlotW = 760, kPanelH = 64, kGapH = 14;
constexpr int kColumns = 380;
constexpr size_t kMaxRanks = 16;

struct Column {
  double duration = -1, gap = -1;
  int verdict = 0;  // 0 normal, 1 insufficient, 2 abnormal
  double top = -1;  // impact of the abnormal unit linked
  size_t unit = 0;
  bool detail = false;  // a step in it had device and operator detail (inside a detail window)
};

struct Lane {
  int64_t rank = -1;
  std::vector<size_t> units;  // by start time
};

// Units per rank of one view each: vertical when the rank has any, else horizontal.
std::vector<Lane> Lanes(const std::vector<StepDiagnosis>& d) {
  std::map<int64_t, std::vector<size_t>> v, h;
  for (size_t u = 0; u < d.size(); ++u) {
    const StepEvidence& e = d[u].evidence;
    if (e.end_ns <= e.start_ns) continue;
    (e.view == View::kVertical ? v : h)[e.rank.value_or(-1)].push_back(u);
  }
  for (auto& [rank, units] : h) v.emplace(rank, units);  // keeps the vertical units where present
  std::vector<Lane> lanes;
  for (auto& [rank, units] : v) {
    std::stable_sort(units.begin(), units.end(),
                     [&](size_t a, size_t b) { return d[a].evidence.start_ns < d[b].evidence.start_ns; });
    lanes.push_back({rank, units});
  }
  return lanes;
}

std::vector<Column> Bin(const std::vector<StepDiagnosis>& d, const Lane& lane, int64_t t0, double span) {
  std::vector<Column> cols(kColumns);
  int64_t prev_end = -1;
  for (size_t u : lane.units) {
    const StepEvidence& e = d[u].evidence;
    const int c = std::clamp(static_cast<int>((e.start_ns - t0) / span * kColumns), 0, kColumns - 1);
    Column& col = cols[c];
    col.duration = std::max(col.duration, static_cast<double>(e.end_ns - e.start_ns));
    if (prev_end >= 0) col.gap = std::max(col.gap, static_cast<double>(std::max<int64_t>(0, e.start_ns - prev_end)));
    prev_end = std::max(prev_end, e.end_ns);
    col.detail = col.detail || (e.device_detail && e.operator_detail);
    const int verdict = d[u].label == Verdict::kAbnormal ? 2 : d[u].label == Verdict::kInsufficient ? 1 : 0;
    col.verdict = std::max(col.verdict, verdict);
    if (verdict == 2 && Impact(d[u]) > col.top) {
      col.top = Impact(d[u]);
      col.unit = u;
    }
  }
  return cols;
}

// A scale that a single warm-up step does not flatten: the 95th percentile of every value times
// 3, or the largest value when smaller. Values above it are drawn clipped at the top.
double Scale(const std::vector<std::vector<Column>>& lanes) {
  std::vector<double> v;
  for (const auto& cols : lanes) {
    for (const Column& c : cols) {
      if (c.duration >= 0) v.push_back(c.duration);
      if (c.gap >= 0) v.push_back(c.gap);
    }
  }
  if (v.empty()) return 1;
  std::sort(v.begin(), v.end());
  const double p95 = v[std::min(v.size() - 1, static_cast<size_t>(0.95 * static_cast<double>(v.size())))];
  return std::max(1.0, std::min(v.back(), 3 * p95));
}

std::string Polyline(const std::vector<Column>& cols, bool gap, double y0, double scale, const char* colour) {
  std::string pts;
  for (int c = 0; c < kColumns; ++c) {
    const double v = gap ? cols[c].gap : cols[c].duration;
    if (v < 0) continue;
    const double x = kLeft + (c + 0.5) * kPlotW / kColumns;
    pts += Num(x) + "," + Num(y0 - std::min(v, scale) / scale * kPanelH) + " ";
  }
  return pts.empty() ? "" : "<polyline fill='none' stroke='" + std::string(colour) + "' stroke-width='1.2' points='" +
                                pts + "'/>";
}

// Where the run recorded detail only in windows: a grey tick under each column whose steps had
// full detail (the steps outside were judged on step-level evidence only). Nothing otherwise.
std::string DetailMarks(const std::vector<Column>& cols, double y0) {
  const bool sampled = std::any_of(cols.begin(), cols.end(), [](const Column& c) { return c.duration >= 0 && !c.detail; });
  if (!sampled) return "";
  std::string h;
  for (int c = 0; c < kColumns; ++c) {
    if (!cols[c].detail) continue;
    h += "<rect x='" + Num(kLeft + c * kPlotW / kColumns) + "' y='" + Num(y0 + 2) + "' width='" +
         Num(kPlotW / kColumns) + "' height='4' fill='#777'/>";
  }
  return h;
}

std::string Panel(const std::vector<StepDiagnosis>& d, const Lane& lane, const std::vector<Column>& cols, double y,
                  double scale, const CardPlan& plan) {
  const double y0 = y + kPanelH;
  std::string h = "<text x='4' y='" + Num(y + kPanelH / 2 + 4) + "' font-size='12'>rank " +
                  (lane.rank >= 0 ? std::to_string(lane.rank) : std::string("?")) + "</text>";
  h += "<line x1='" + Num(kLeft) + "' x2='" + Num(kLeft + kPlotW) + "' y1='" + Num(y0) + "' y2='" + Num(y0) +
       "' stroke='#999'/>";
  h += Polyline(cols, true, y0, scale, kOrange) + Polyline(cols, false, y0, scale, kBlue);
  h += DetailMarks(cols, y0);
  for (int c = 0; c < kColumns; ++c) {
    if (cols[c].verdict == 0 || cols[c].duration < 0) continue;
    const double x = kLeft + (c + 0.5) * kPlotW / kColumns;
    const double py = y0 - std::min(cols[c].duration, scale) / scale * kPanelH;
    if (cols[c].verdict == 1) {
      h += "<circle cx='" + Num(x) + "' cy='" + Num(py) + "' r='2' fill='" + kSky + "'/>";
      continue;
    }
    const StepEvidence& e = d[cols[c].unit].evidence;
    const std::string dot = "<circle cx='" + Num(x) + "' cy='" + Num(py) + "' r='3.5' fill='" + kVermillion +
                            "'><title>step " + std::to_string(e.step_index) + ", " + ViewName(e.view) + ": " +
                            Us(static_cast<double>(e.end_ns - e.start_ns)) + " us</title></circle>";
    const std::string& id = plan.ids[cols[c].unit];
    h += id.empty() ? dot : "<a href='#" + id + "'>" + dot + "</a>";
  }
  return h;
}

}  // namespace

std::string RenderStepTimePlot(const std::vector<StepDiagnosis>& d, const CardPlan& plan) {
  std::vector<Lane> lanes = Lanes(d);
  std::string h = "<h2 id='steptime'>Step time over the run</h2>";
  if (lanes.empty()) return h + "<p>No step has a start and end time.</p>";
  const size_t all = lanes.size();
  if (lanes.size() > kMaxRanks) lanes.resize(kMaxRanks);
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (const Lane& l : lanes) {
    for (size_t u : l.units) {
      t0 = std::min(t0, d[u].evidence.start_ns);
      t1 = std::max(t1, d[u].evidence.end_ns);
    }
  }
  const double span = std::max<double>(1, static_cast<double>(t1 - t0) * (1 + 1e-9));
  std::vector<std::vector<Column>> cols;
  for (const Lane& l : lanes) cols.push_back(Bin(d, l, t0, span));
  const double scale = Scale(cols);
  const double height = static_cast<double>(lanes.size()) * (kPanelH + kGapH) + 24;
  h += "<p class='muted'>Per rank: <b style='color:" + std::string(kBlue) + "'>&#9632;</b> step duration, <b style='color:" +
       kOrange + "'>&#9632;</b> time between steps, <b style='color:" + kVermillion + "'>&#9679;</b> abnormal (links to "
       "its card), <b style='color:" + kSky + "'>&#9679;</b> insufficient evidence; a grey tick under the axis marks "
       "steps inside a detail window when the run recorded detail only in windows (the others were judged on "
       "step time, the time between steps and communication only). One point per " +
       Us(span / kColumns) + " us of the run (the longest value in it); values above " + Us(scale) +
       " us are drawn at the top." + (all > lanes.size() ? " The first " + std::to_string(lanes.size()) + " of " +
       std::to_string(all) + " ranks are shown." : std::string()) + "</p>";
  h += "<svg id='steptime-plot' xmlns='http://www.w3.org/2000/svg' width='" + Num(kLeft + kPlotW + 20, 0) +
       "' height='" + Num(height, 0) + "'>";
  for (size_t i = 0; i < lanes.size(); ++i) {
    const double y = static_cast<double>(i) * (kPanelH + kGapH) + 4;
    h += Panel(d, lanes[i], cols[i], y, scale, plan);
    h += "<text x='" + Num(kLeft - 4) + "' y='" + Num(y + 9) + "' font-size='10' text-anchor='end'>" + Us(scale / 1e3) +
         " ms</text>";
  }
  h += "<text x='" + Num(kLeft) + "' y='" + Num(height - 4) + "' font-size='10'>0 s</text><text x='" +
       Num(kLeft + kPlotW) + "' y='" + Num(height - 4) + "' font-size='10' text-anchor='end'>" +
       Num(static_cast<double>(t1 - t0) / 1e9, 3) + " s</text>";
  return h + "</svg>";
}

}  // namespace truffld::diagnose::report
