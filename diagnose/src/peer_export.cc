// Peer mode's test export (--export-tests): one CSV line per tested cost (see output.h).
#include <cmath>
#include <cstdio>
#include <fstream>

#include "truffld/diagnose/output.h"
#include "truffld/diagnose/peer_stage.h"

namespace truffld::diagnose {

Status WriteTests(const std::string& path, const InstanceTable& t, const PeerStageResult& r) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return IoError(path + ": cannot open for writing");
  out << "rank,step_index,view,family,level,metric,observed_ns";
  for (int s = 0; s < kNumSources; ++s) {
    const std::string n = SourceName(static_cast<Source>(s));
    out << ",expected_" << n << ",peers_" << n << ",p_" << n;
  }
  out << ",p_value,unit_verdict,unit_p\n";
  char num[64];
  for (const TestRow& row : r.rows) {
    const StepInfo& st = t.steps[row.unit];
    out << (st.rank ? std::to_string(*st.rank) : "") << ',' << st.step_index << ',' << st.view << ','
        << CsvField(t.strings.Get(row.family)) << ',' << (row.instance == kFamilyRow ? "family" : "instance")
        << ',' << MetricName(row.metric) << ',' << row.observed;
    for (int s = 0; s < kNumSources; ++s) {
      const size_t k = static_cast<size_t>(s);
      if (std::isnan(row.expected[k])) {
        out << ",,,";
        continue;
      }
      std::snprintf(num, sizeof num, ",%.9g,%d,%.6g", row.expected[k], row.peers[k], row.p[k]);
      out << num;
    }
    const UnitVerdict& v = r.decision.units[row.unit];
    std::snprintf(num, sizeof num, ",%.6g,%s,%.6g\n", row.p_value, VerdictName(v.verdict), v.p_value);
    out << num;
  }
  out.flush();
  if (!out) return IoError(path + ": write failed");
  return Status::Ok();
}

}  // namespace truffld::diagnose
