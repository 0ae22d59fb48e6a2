// truffld-diagnose's hang localisation: summary.json in, hang.json out (hang_cli.h).
#include "hang_cli.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "truffld/atomic_file.h"
#include "truffld/cli.h"
#include "truffld/output_lock.h"
#include "truffld/terminal_text.h"

#include "merge_files.h"

namespace truffld::diagnose {

Result<HangRun> AnalyseHang(const std::string& input) {
  HangRun run;
  run.summary_path = MergeFilePath(input, "summary.json");
  std::ifstream f(run.summary_path, std::ios::binary);
  if (!f) return NotFound(run.summary_path + ": cannot read truffld-merge's summary.json (hang localisation needs it)");
  std::ostringstream text;
  text << f.rdbuf();
  if (f.bad()) return IoError(run.summary_path + ": read failed");
  auto ends = ParseEndStates(text.str(), run.summary_path);
  if (!ends.ok()) return ends.status();
  run.ends = std::move(ends).value();
  run.report = LocateHang(run.ends);
  return run;
}

Result<OutputLock> ClaimOutdir(const Args& a) {
  std::error_code ec;
  std::filesystem::create_directories(a.outdir, ec);
  if (ec) return IoError(a.outdir + ": cannot create output directory: " + ec.message());
  return OutputLock::Acquire(a.outdir, "truffld-diagnose", a.wait_lock);
}

Status CommitAlone(const Args& a, const std::vector<std::pair<std::string, std::string>>& files) {
  OutputSet out;
  for (const auto& [name, bytes] : files)
    TRUFFLD_RETURN_IF_ERROR(out.Add((std::filesystem::path(a.outdir) / name).string(), bytes));
  return out.Commit();
}

int RunHangOnly(const Args& a) {
  auto run = AnalyseHang(a.input);
  auto fail = [](int code, const std::string& m) {
    std::fprintf(stderr, "truffld-diagnose: %s\n", EscapeForTerminal(m).c_str());
    return code;
  };
  if (!run.ok()) return fail(kExitInput, run.status().message());
  auto lock = ClaimOutdir(a);
  if (!lock.ok()) return fail(kExitOutput, lock.status().message());
  const Status st = CommitAlone(a, {{"hang.json", HangJson(run->ends, run->report).dump(2) + "\n"}});
  if (!st.ok()) return fail(kExitOutput, st.message());
  if (!a.quiet) {
    std::printf("%s: %s\n", HangStatusName(run->report.status), EscapeForTerminal(run->report.sentence).c_str());
    for (const std::string& l : run->report.rank_lines) std::printf("  %s\n", EscapeForTerminal(l).c_str());
  }
  return kExitOk;
}

}  // namespace truffld::diagnose
