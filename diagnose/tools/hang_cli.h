// The file side of hang localisation for truffld-diagnose: finds and reads truffld-merge's
// summary.json for the input, runs LocateHang (hang/hang.h) on its end states, and
// (--hang) writes hang.json alone. Thread-safety: call from one thread.
#pragma once

#include <string>
#include <vector>

#include "hang/hang.h"
#include "options.h"

namespace truffld::diagnose {

struct HangRun {
  std::string summary_path;
  std::vector<RankEnd> ends;
  HangReport report;
};

// summary.json for `input`: inside it when it is a directory, else beside the trees file.
std::string SummaryPathFor(const std::string& input);

// Reads the summary and localises. NotFound-style error (message says so) when it is absent.
Result<HangRun> AnalyseHang(const std::string& input);

// --hang: writes OUTDIR/hang.json and prints the finding. Returns the exit status.
int RunHangOnly(const Args& a);

}  // namespace truffld::diagnose
