// Ground-truth writers of the FaultBook (see faults.h): ledger.jsonl, one line per injected fault
// with what it cost the steps of its own rank, and labels.jsonl, one line per (rank, step, view)
// with the faulty operator families and fault ids (the format truffld-diagnose --labels reads).
// Kept apart from fault planning and effects (faults.cc): these only serialise the book once the
// run is over, so the output format can change without touching the simulation.
#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "truffld/synth/faults.h"
#include "truffld/synth/record_writer.h"

namespace truffld::synth {
namespace {

// Shortest decimal that reads back as `v` (intensities in the ledger).
std::string ShortestNum(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

Status FaultBook::WriteLedger(ByteSink* sink) const {
  // Each entry's cost: the summed cost of the steps of its own rank it touched; absorbed when
  // every step it touched (any rank) was absorbed.
  std::vector<int64_t> cost(ledger_.size(), 0);
  std::vector<int> touched(ledger_.size(), 0), kept(ledger_.size(), 0);
  for (size_t r = 0; r < truth_.size(); ++r) {
    for (const StepTruth& st : truth_[r]) {
      std::vector<int32_t> seen;
      for (int v = 0; v < 2; ++v) {
        for (int32_t f : st.faults[v]) {
          kept[f] += st.Absorbed(v) ? 0 : 1;  // kept in either view
          if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
          seen.push_back(f);
          ++touched[f];
          if (ledger_[f].rank == static_cast<int>(r) && st.cost_ns > 0) cost[f] += st.cost_ns;
        }
      }
    }
  }
  std::string out;
  for (size_t k = 0; k < ledger_.size(); ++k) {
    const LedgerEntry& e = ledger_[k];
    out += "{\"id\":\"" + e.id + "\",\"class\":\"" + FaultClassName(e.cls) + "\",\"layer\":\"" +
           FaultClassLayer(e.cls) + "\",\"target\":\"" + JsonEscape(e.target) + "\"";
    if (e.cls == FaultClass::kCudaKernel) {
      out += ",\"kernel_pattern\":\"" + std::string(KernelClassPattern(e.kernel_class)) + "\"";
    }
    out += ",\"rank\":" + std::to_string(e.rank) + ",\"host\":\"" + JsonEscape(e.host) + "\"";
    if (e.cls == FaultClass::kCommunication) {
      out += ",\"scope\":\"" + std::string(CommScopeName(e.scope)) + "\"";
      if (e.peer >= 0) out += ",\"peer\":" + std::to_string(e.peer);
    }
    if (!e.group.empty()) out += ",\"group\":\"" + e.group + "\"";
    out += ",\"start\":" + std::to_string(e.start) + ",\"end\":" + std::to_string(e.end) +
           ",\"intensity\":" + ShortestNum(e.intensity) + ",\"level\":\"" + IntensityName(e.intensity) +
           "\",\"sufficient\":" + (e.sufficient ? "true" : "false") +
           ",\"first_step\":" + std::to_string(e.first_step) + ",\"last_step\":" + std::to_string(e.last_step);
    if (touched[k] > 0) {
      out += ",\"cost_ns\":" + std::to_string(cost[k]) + ",\"absorbed\":" + (kept[k] == 0 ? "true" : "false");
    }
    out += ",\"clock\":\"realtime\"}\n";
  }
  return sink->Write(out);
}

Status FaultBook::WriteLabels(ByteSink* sink) const {
  static const char* kViews[2] = {"vertical", "horizontal"};
  std::string out;
  for (size_t r = 0; r < truth_.size(); ++r) {
    for (size_t s = 0; s < truth_[r].size(); ++s) {
      const StepTruth& st = truth_[r][s];
      for (int v = 0; v < 2; ++v) {
        const bool abnormal = st.Abnormal(v);
        out += "{\"rank\":" + std::to_string(r) + ",\"step_index\":" + std::to_string(s) + ",\"view\":\"" +
               kViews[v] + "\",\"abnormal\":" + (abnormal ? "true" : "false") + ",\"faulty\":[";
        std::vector<std::string> fams;
        for (int b = 0; b < 64; ++b) {
          if (st.faulty[v] >> b & 1) fams.push_back(cat_.Escaped(static_cast<int16_t>(b)));
        }
        std::sort(fams.begin(), fams.end());
        std::string fam_list, id_list;
        for (size_t i = 0; i < fams.size(); ++i) fam_list += (i ? ",\"" : "\"") + fams[i] + "\"";
        for (size_t k = 0; k < st.faults[v].size(); ++k) {
          id_list += (k ? ",\"" : "\"") + ledger_[st.faults[v][k]].id + "\"";
        }
        if (abnormal) out += fam_list;
        out += "],\"fault_ids\":[";
        if (abnormal) out += id_list;
        out += "],\"phase\":\"" + std::string(st.phase) + "\"";
        if (st.faulty[v] != 0 && st.cost_ns >= 0) {
          out += ",\"cost_ns\":" + std::to_string(st.cost_ns) + ",\"counterfactual_ns\":" + std::to_string(st.cf_ns);
          if (v == 1) out += ",\"transfer_cost_ns\":" + std::to_string(st.transfer_cost_ns);
          if (st.Absorbed(v)) {
            out += ",\"absorbed\":true,\"absorbed_faulty\":[" + fam_list + "],\"absorbed_fault_ids\":[" + id_list + "]";
          }
        }
        out += "}\n";
      }
      if (out.size() > (1 << 20)) {
        TRUFFLD_RETURN_IF_ERROR(sink->Write(out));
        out.clear();
      }
    }
  }
  return sink->Write(out);
}

}  // namespace truffld::synth
