// The per-file pass driver.
#include "core/file_trees.h"

#include <algorithm>
#include <utility>

#include "core/correlation.h"
#include "core/end_state.h"
#include "core/graph_capture.h"
#include "core/repeated_steps.h"
#include "core/step_detail.h"

namespace truffld::merge {
namespace {

// Events read per kind (a folded range was read as an NVTX_PUSH and an NVTX_POP) and the
// device-op totals.
MergeCounters CountRead(const TraceFile& file, uint64_t* graph_nodes) {
  uint64_t per_kind[16] = {};
  for (const Event& e : file.events) ++per_kind[static_cast<int>(e.kind)];
  const uint64_t folded = per_kind[int(EventKind::kNvtxRange)];
  per_kind[int(EventKind::kNvtxPush)] += folded;
  per_kind[int(EventKind::kNvtxPop)] += folded;
  MergeCounters c;
  for (int k = 0; k < int(EventKind::kNvtxRange); ++k)
    if (per_kind[k]) c.events_read.Add(EventKind(k), per_kind[k]);
  c.kernels_read = per_kind[int(EventKind::kKernel)];
  c.memcpys_read = per_kind[int(EventKind::kMemcpy)];
  c.memsets_read = per_kind[int(EventKind::kMemset)];
  c.device_ops_read = c.kernels_read + c.memcpys_read + c.memsets_read;
  *graph_nodes = per_kind[int(EventKind::kGraphNode)];
  return c;
}

void AddDeviceCounters(const DeviceLinks& links, MergeCounters* c) {
  c->device_ops_linked_unique = links.linked;
  c->kernels_linked_unique = links.kernels_linked;
  c->device_ops_unattributed = links.unattributed;
  c->kernels_unattributed = links.kernels_unattributed;
  c->unattributed_reasons = links.reasons;
}

}  // namespace

FileTrees BuildFileTrees(uint32_t file_index, TraceFile& file, const ClockMap& clock, const MergeOptions& options) {
  uint64_t graph_nodes = 0;
  MergeCounters c = CountRead(file, &graph_nodes);
  RangeCounters rc;
  std::vector<RangeClose> closes;
  std::vector<HostRange> ranges = BuildHostRanges(file, &rc, &file.stats, &closes);
  const std::vector<JoinedPayload> payloads = JoinClosingPayloads(closes, file, &file.strings);
  RangeClasses classes(options.rules, file.strings);
  RangeLayers layers = ClassifyRanges(file, ranges, &classes, options.implicit_steps);
  Nesting nesting = NestRanges(file, ranges, layers);
  const RepeatedCallSteps repeated = FindRepeatedCallSteps(file, ranges, layers, nesting);
  if (!repeated.ranges.empty()) {
    ApplyRepeatedCallSteps(repeated, &layers);
    nesting = NestRanges(file, ranges, layers);
  }
  c.repeated_call_steps = repeated.ranges.size();
  c.ranges_outside_steps = uint64_t(std::count(nesting.step.begin(), nesting.step.begin() + nesting.real_ranges, kNoRange));
  const bool graphs = graph_nodes > 0;  // capture ranges serve graph attribution only
  ApiCalls api = AttachApiCalls(file, ranges, layers.implicit, nesting, graphs);
  CorrelationIndex index = IndexCorrelations(file, api.order, &file.stats);
  std::vector<uint32_t>().swap(api.order);
  const DeviceLinks links = LinkDeviceWork(file, index, api, c.device_ops_read, &file.stats);
  FileEndState end_state = EndStateOf(file, clock, ranges, rc.open_at_end, nesting, links);
  const auto capture = graphs ? CaptureOwners(file, index, api) : std::unordered_map<int64_t, uint32_t>();
  std::vector<CorrEntry>().swap(index.entries);
  BuildInputs in;
  in.file_index = file_index;
  in.clock = &clock;
  in.ranges = &ranges;
  in.payloads = &payloads;
  in.layers = &layers;
  in.nesting = &nesting;
  in.api = &api;
  in.links = &links;
  in.capture = &capture;
  FileTrees trees = BuildTrees(file, in, &classes, &file.strings);
  c.unmatched_pops = rc.unmatched_pops;
  c.unclosed_ranges = rc.unclosed_ranges;
  c.zero_length_ranges = rc.zero_length_ranges;
  c.adopted_ranges = nesting.adopted_ranges;
  c.adopted_api_calls = api.adopted;
  c.api_calls_outside_step = api.outside_step;
  c.nested_api_calls = index.nested_api_calls;
  c.duplicate_correlations = index.duplicate_correlations;
  AddDeviceCounters(links, &c);
  c.graph_ops_attributed = trees.counters.graph_ops_attributed;
  c.capture_ranges_outside_steps = trees.counters.capture_ranges_outside_steps;
  c.implicit_steps = trees.counters.implicit_steps;
  c.steps = trees.counters.steps;
  CountStepDetail(file, clock, options.rules, &trees, &c);
  trees.counters = std::move(c);
  trees.end_state = std::move(end_state);
  return trees;
}

}  // namespace truffld::merge
