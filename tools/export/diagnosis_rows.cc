// ParseVerdictLine (see diagnosis_rows.h).
#include "diagnosis_rows.h"

#include <simdjson.h>

#include "tree_node.h"

namespace truffld::exporter {

namespace {

std::string Str(simdjson::dom::object o, const char* k) {
  std::string_view s;
  return o[k].get_string().get(s) == simdjson::SUCCESS ? std::string(s) : std::string();
}
std::optional<int64_t> Int(simdjson::dom::object o, const char* k) {
  simdjson::dom::element e;
  return o[k].get(e) == simdjson::SUCCESS ? JsonInt(e) : std::nullopt;
}
std::optional<double> Num(simdjson::dom::object o, const char* k) {
  double d = 0;
  return o[k].get_double().get(d) == simdjson::SUCCESS ? std::optional<double>(d) : std::nullopt;
}

FaultyRow ParseFaulty(simdjson::dom::object f) {
  FaultyRow r;
  r.family = Str(f, "family");
  r.layer = Str(f, "layer");
  r.method = Str(f, "method");
  r.metric = Str(f, "metric");
  r.basis = Str(f, "basis");
  r.evidence = Str(f, "evidence");
  r.score = Num(f, "score");
  r.probability = Num(f, "probability");
  r.share = Num(f, "share");
  r.instances = Int(f, "instances");
  r.observed_ns = Int(f, "observed_ns");
  r.expected_ns = Int(f, "expected_ns");
  r.excess_ns = Int(f, "excess_ns");
  r.impact_ns = Int(f, "impact_ns");
  r.absorbed_ns = Int(f, "absorbed_ns");
  return r;
}

}  // namespace

Result<VerdictRow> ParseVerdictLine(std::string_view line) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(line.data(), line.size()).get(doc); err != simdjson::SUCCESS) {
    return ParseError(std::string("not JSON (") + simdjson::error_message(err) + ")");
  }
  simdjson::dom::object o;
  if (doc.get_object().get(o) != simdjson::SUCCESS) return ParseError("not a JSON object");
  VerdictRow r;
  r.rank = Int(o, "rank");
  r.step_index = Int(o, "step_index");
  r.view = Str(o, "view");
  r.label = Str(o, "label");
  if (!r.step_index || r.view.empty() || r.label.empty()) {
    return ParseError("not a diagnosis line (step_index, view or label missing)");
  }
  r.phase = Str(o, "phase");
  r.evidence = Str(o, "evidence");
  r.duration_ns = Int(o, "duration_ns");
  r.start_ns = Int(o, "start_ns");
  r.end_ns = Int(o, "end_ns");
  r.impact_ns = Int(o, "impact_ns");
  r.absorbed_ns = Int(o, "absorbed_ns");
  r.waited_ns = Int(o, "waited_ns");
  r.waiting_on_rank = Int(o, "waiting_on_rank");
  simdjson::dom::object sub;
  if (o["calibration"].get_object().get(sub) == simdjson::SUCCESS) r.p_value = Num(sub, "p_value");
  if (o["stage2"].get_object().get(sub) == simdjson::SUCCESS) r.stage2_source = Str(sub, "source");
  simdjson::dom::array faulty;
  if (o["faulty"].get_array().get(faulty) == simdjson::SUCCESS) {
    for (simdjson::dom::element f : faulty) {
      simdjson::dom::object fo;
      if (f.get_object().get(fo) == simdjson::SUCCESS) r.faulty.push_back(ParseFaulty(fo));
    }
  }
  return r;
}

}  // namespace truffld::exporter
