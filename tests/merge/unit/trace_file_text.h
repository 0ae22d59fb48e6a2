// A canonical text rendering of everything an importer put in a TraceFile (meta, every event
// field with its strings resolved, extras, kept args, counters, kept problem messages), so that
// two ways of reading the same input can be compared with one string equality and a readable
// diff. Used by the raw-parser and Kineto-batch differential tests and their fuzzers.
#pragma once

#include <sstream>
#include <string>

#include "truffld/merge/event.h"

namespace truffld::merge::testing {

inline std::string TraceFileText(const TraceFile& f) {
  std::ostringstream o;
  auto str = [&](StrId id) { return id == kNoStr ? std::string("-") : "'" + std::string(f.strings.Get(id)) + "'"; };
  o << "meta format=" << f.meta.format << " host=" << f.meta.host << " pid=" << f.meta.process_id
    << " rank=" << (f.meta.rank ? std::to_string(*f.meta.rank) : "-")
    << " local=" << (f.meta.local_rank ? std::to_string(*f.meta.local_rank) : "-")
    << " world=" << (f.meta.world_size ? std::to_string(*f.meta.world_size) : "-")
    << " clock=" << int(f.meta.clock) << " has_meta=" << f.meta.has_meta << " stats=" << f.meta.stats_json << "\n";
  for (const auto& [r, m] : f.meta.clock_sync) o << "sync " << r << " " << m << "\n";
  o << "device_sampled=" << f.meta.device_sampled << " all=" << f.meta.device_all << "\n";
  for (const auto& w : f.meta.device_window_edges) o << "window " << w.id << " " << w.at << " " << int(w.edge) << "\n";
  for (const Event& e : f.events) {
    o << "ev " << EventKindName(e.kind) << " " << e.start << ".." << e.end << " p" << f.ProcessOf(e) << " t"
      << f.ThreadIdOf(e) << " c" << f.Correlation(e) << " n=" << str(e.name) << " d=" << str(f.Extra(e).domain);
    const EventExtra& x = f.Extra(e);
    o << " cat=" << str(x.category) << " line=" << f.LineOf(e) << " dev=" << x.device << " s=" << x.stream
      << " cbid=" << x.cbid;
    o << " rc=" << x.return_code << " b" << x.bytes << " ck=" << str(x.copy_kind) << " pl=" << str(x.payload);
    o << " x[" << x.range_id << " " << x.graph_id << " " << x.graph_node_id << " " << x.original_graph_node_id
      << " " << x.grid[0] << "," << x.grid[1] << "," << x.grid[2] << " " << x.block[0] << "," << x.block[1]
      << "," << x.block[2] << "]\n";
  }
  for (size_t i = 0; i < f.args.size(); ++i) o << "args " << i << " " << str(f.args[i]) << "\n";
  for (const auto& [k, n] : f.stats.counts.items) o << "count " << IngestStats::Name(k) << "=" << n << "\n";
  for (const IngestIssue& i : f.stats.issues) o << "issue " << i.where << " " << ProblemKey(i.kind) << " " << i.message << "\n";
  return o.str();
}

}  // namespace truffld::merge::testing
