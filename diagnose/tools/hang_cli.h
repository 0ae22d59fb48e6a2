// The file side of hang localisation for truffld-diagnose: finds and reads truffld-merge's
// summary.json for the input, runs LocateHang (hang/hang.h) on its end states, and
// (--hang) writes hang.json alone; and what every mode does to OUTDIR: claim it (create it,
// take its lock) and, for the modes that write no diagnosis (--hang, --compare), commit their
// few files together. Thread-safety: call from one thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "truffld/output_lock.h"

#include "hang/hang.h"
#include "options.h"

namespace truffld::diagnose {

struct HangRun {
  std::string summary_path;
  std::vector<RankEnd> ends;
  HangReport report;
};

// Reads the summary and localises. NotFound-style error (message says so) when it is absent.
Result<HangRun> AnalyseHang(const std::string& input);

// Creates OUTDIR and takes its lock (held while the returned object lives); the error names
// the directory (exit status 3).
Result<OutputLock> ClaimOutdir(const Args& a);

// Writes (name in OUTDIR, bytes) files under temporary names and renames them into place
// together (truffld/atomic_file.h).
Status CommitAlone(const Args& a, const std::vector<std::pair<std::string, std::string>>& files);

// --hang: writes OUTDIR/hang.json and prints the finding. Returns the exit status.
int RunHangOnly(const Args& a);

}  // namespace truffld::diagnose
