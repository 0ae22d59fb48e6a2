// truffld-merge command line: thin adapter from flags and files to the merge library.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "truffld/atomic_file.h"
#include "truffld/cli.h"
#include "truffld/cli_parse.h"
#include "truffld/direct_writer.h"
#include "truffld/merge/import.h"
#include "truffld/merge/pipeline.h"
#include "truffld/merge/run_database.h"
#include "truffld/merge/run_stats.h"
#include "truffld/merge/writers.h"
#include "truffld/output_lock.h"
#include "truffld/terminal_text.h"

using namespace truffld;
using namespace truffld::merge;

namespace {

constexpr const char* kDescription = R"(truffld-merge: rebuild per-request call-chain trees from GPU traces.

Reads truffld raw dumps (.jsonl, .jsonl.gz, .jsonl.zst; also the NVTX_MARKER dialect), PyTorch
profiler (Kineto) Chrome traces (.json, .json.gz, .json.zst; a {"traceEvents": [...]} object or
a bare [...] array) and Nsight Systems SQLite exports; the format is detected from the content.
A damaged trace keeps what can be read; the damage is counted in summary.json. Inputs holding
no event at all are exit 1. Directories are searched recursively. Writes into OUTDIR:
  trees.jsonl   the call-chain tree of every (rank, step, request, view) [schemas/trees.schema.json];
                requests that see the identical tree share one line ("request_group"),
                --per-request-trees writes one line per request instead
  trace.json    Chrome/Perfetto trace: a process per rank, threads and GPU streams as tracks
  run_stats.json  kernel time per name, GPU idle share per step, launch latency, compute/
                communication overlap per rank           [schemas/stats-summary.schema.json]
  summary.json  what was read, linked, dropped and why               [schemas/summary.schema.json]
With --sqlite FILE it also writes the run as one SQLite database (steps, requests, operators,
calls, kernels, copies, collectives; docs/sqlite.md), the same tables and rows truffld-export
builds from trees.jsonl, from the trees in memory; `truffld-export --db FILE --diagnosis
DIAG_DIR` adds a diagnosis to it.
Bad records are counted and reported with file:line; the rest is merged (--strict: fail).
truffld's own outputs (an earlier merge's trace.json, trees.jsonl, ...) and repeated inputs (the
same file twice, or x.jsonl beside x.jsonl.gz) are skipped and reported. Outputs are written under
temporary names and renamed into place when complete; with --no-trace-json an earlier run's
trace.json is removed.

Examples:
  truffld-merge /tmp/truffld-dumps -o merged/
  truffld-merge rank0.jsonl.zst rank1.jsonl.zst -o out --rules my-rules.json
  truffld-merge trace.pt.trace.json.gz -o out --no-trace-json
  truffld-merge dumps/ -o out --request-regex 'reqs=([^;]*)'
  truffld-merge dumps/ -o out --sqlite out/run.sqlite && sqlite3 out/run.sqlite '.tables'
)";

int Fail(int code, const std::string& message) {
  std::cerr << "truffld-merge: " << EscapeForTerminal(message) << "\n";
  return code;
}

// How the outputs reach the disk. kDirect: direct I/O from the writers' own buffers
// (truffld/direct_writer.h), or the page cache where the file system refuses it; kCached:
// the page cache, as any program writes.
enum class WriteMode { kDirect, kCached };

// Writes one output under a temporary name beside `path` (truffld/atomic_file.h); the caller
// commits it once every output is complete.
Result<AtomicFile> WriteFile(const std::filesystem::path& path, WriteMode mode,
                             const std::function<void(JsonOut*)>& body) {
  auto file = AtomicFile::Create(path.string());
  if (!file.ok()) return file.status();
  if (mode == WriteMode::kDirect) {
    auto dw = DirectWriter::Adopt(file->fd(), path.string());
    if (!dw.ok()) return dw.status();
    if (*dw) {
      file->ReleaseFd();  // the DirectWriter closes it
      JsonOut out(dw->get(), path.string());
      body(&out);
      if (Status st = out.Close(); !st.ok()) return st;
      return std::move(file).value();
    }
  }
  std::FILE* f = ::fdopen(file->fd(), "wb");
  if (!f) return IoError(path.string() + ": cannot write: " + std::strerror(errno));
  file->ReleaseFd();  // fclose closes it
  JsonOut out(f, path.string());
  body(&out);
  Status st = out.Close();
  if (std::fclose(f) != 0 && st.ok()) st = IoError(path.string() + ": close failed: " + std::strerror(errno));
  if (!st.ok()) return st;
  return std::move(file).value();
}

// A named input that does not exist at all (a typo) stops the run before any work: exit 1 naming
// it. One that exists but cannot be read (a dangling link, no permission) is reported and skipped
// like any unreadable file, so the rest is still merged.
std::optional<std::string> MissingInput(const std::vector<std::string>& inputs) {
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (in != "-" && !std::filesystem::exists(std::filesystem::symlink_status(in, ec))) {
      return in + ": " + (ec ? ec.message() : std::string("no such file or directory"));
    }
  }
  return std::nullopt;
}

// Tells stderr about the skipped inputs from index `from` on (not the non-trace files found in
// folders, which only the summary lists).
void PrintSkipped(const std::vector<SkippedInput>& skipped, size_t from) {
  for (size_t i = from; i < skipped.size(); ++i) {
    const SkippedInput& s = skipped[i];
    if (s.kind != SkipKind::kNotTrace)
      std::cerr << "truffld-merge: skipping " << EscapeForTerminal(s.path) << ": " << EscapeForTerminal(s.reason) << "\n";
  }
}

struct Args {
  std::vector<std::string> inputs;
  std::string outdir, rules_path, request_regex, step_window, sqlite;
  bool strict = false, no_trace = false, no_implicit = false, quiet = false, per_request = false;
  bool keep_cache = false, no_direct = false, wait_lock = false;
  int threads = 2;
};

void AddFlags(CLI::App& app, Args& a) {
  app.add_option("inputs", a.inputs, "Input files or directories (format detected from content)")->required();
  app.add_option("-o,--out", a.outdir, "Output directory (created if missing)")->required();
  app.add_option("--rules", a.rules_path,
                 "Classification rules JSON (schemas/rules.schema.json); tried before the built-in rules. "
                 "Its name_regex and request_regex are RE2 syntax (linear-time: no backreferences or "
                 "lookaround); an invalid one is a usage error (exit 2) naming the rule");
  app.add_option("--request-regex", a.request_regex,
                 "RE2 regex whose first group holds a step's request ids separated by '_' "
                 "(default: request_ids:(...) as in step_execute_model[request_ids:0_1_2]); "
                 "an invalid one is a usage error (exit 2)");
  app.add_flag("--strict", a.strict, "Any bad record, unreadable file or unlinkable device op is fatal");
  app.add_option("--threads", a.threads, "Threads for parsing and building (one file per thread); with 2 or more, trees.jsonl and trace.json are also written at the same time")
      ->default_val(2)->check(CLI::Range(1, 256));
  app.add_option("--sqlite", a.sqlite,
                 "Also write the run as a SQLite database FILE (truffld.sqlite/1, docs/sqlite.md): the tables "
                 "truffld-export writes from trees.jsonl, built from the trees in memory while the other outputs "
                 "are written (no second read of trees.jsonl); the diagnosis tables stay empty (truffld-export "
                 "--db FILE --diagnosis DIR fills them). Written under a temporary name and renamed with the "
                 "other outputs")
      ->type_name("FILE");
  app.add_flag("--no-trace-json", a.no_trace, "Skip trace.json (faster, less disk); an earlier run's trace.json in OUTDIR is removed");
  app.add_flag("--no-implicit-steps", a.no_implicit,
               "Files without any step range get neither steps from a repeated top-level call nor one "
               "whole-process step");
  app.add_flag("--per-request-trees", a.per_request,
               "Write one trees.jsonl line per (rank, step, request, view) even when requests share "
               "an identical tree (default: one line per group of requests, listed in request_group; "
               "a step batching N requests then costs one line, not N)");
  app.add_flag("--keep-page-cache", a.keep_cache,
               "Write the outputs through the page cache and leave them there, as most programs do "
               "(default: direct I/O, see --no-direct-io; a later reader reads the files from disk)");
  app.add_flag("--no-direct-io", a.no_direct,
               "Write the outputs through the page cache instead of with direct I/O (the default, "
               "which skips the cache and costs the least CPU; the page cache is used anyway where "
               "the file system refuses direct I/O, such as tmpfs); the same as --keep-page-cache");
  app.add_flag("--wait-lock", a.wait_lock,
               "When another run is writing OUTDIR (it holds OUTDIR/.truffld.lock), wait for it "
               "instead of exiting 3 at once");
  app.add_option("--step-window", a.step_window,
                 "K:N: keep each rank's steps K*N to K*N+N-1 (rank-local step index from 0, time order) plus "
                 "step K*N-1 before them, one step of overlap so the first one's gap is known; step indices "
                 "stay the whole dumps' (summary.json ranks[].steps_in_dumps counts them all). A long run "
                 "sharded by time window (truffld-fleet --window-steps)");
  app.add_flag("-q,--quiet", a.quiet, "No stdout summary, no progress line");
}

// Writes trees.jsonl, trace.json (unless --no-trace-json), run_stats.json, summary.json and the
// --sqlite database under temporary names
// and, when all are complete, renames them into place; with --no-trace-json an earlier run's
// trace.json is removed. Any failure leaves OUTDIR as it was.
Status WriteOutputs(const Args& a, const MergeResult& r, RunInfo& run, Progress& progress,
                    std::chrono::steady_clock::time_point t0) {
  namespace fs = std::filesystem;
  const WriteMode mode = a.keep_cache || a.no_direct ? WriteMode::kCached : WriteMode::kDirect;
  const fs::path out(a.outdir);
  // trees.jsonl and trace.json only read the merge result: with two or more threads they are
  // written at the same time (each writer owns its file, its buffer and its counters).
  ProgressTimer timer(progress, a.no_trace ? "writing trees.jsonl..." : "writing trees.jsonl and trace.json...");
  std::unique_ptr<RunDatabase> db;  // --sqlite: its rows built and inserted by threads of its own
  if (!a.sqlite.empty()) {
    auto started = RunDatabase::Start(r, run.tree_layout, a.sqlite);
    if (!started.ok()) return started.status();
    db = std::move(started).value();
  }
  std::optional<Result<AtomicFile>> trace;
  auto write_trace = [&] {
    trace.emplace(WriteFile(out / "trace.json", mode, [&](JsonOut* o) { run.trace = WriteChromeTrace(r, o); }));
  };
  std::thread trace_writer;
  if (!a.no_trace && a.threads > 1) trace_writer = std::thread(write_trace);
  Result<AtomicFile> trees = WriteFile(out / "trees.jsonl", mode, [&](JsonOut* o) {
    run.trees_written = WriteTreesJsonl(r, o, run.tree_layout);
  });
  // The run's summaries, computed while trace.json is still being written.
  Result<AtomicFile> stats = WriteFile(out / "run_stats.json", mode,
                                       [&](JsonOut* o) { o->Raw(RunStatsJson(ComputeRunStats(r))); });
  if (trace_writer.joinable()) trace_writer.join();
  if (!trees.ok()) return trees.status();
  if (!stats.ok()) return stats.status();
  if (!a.no_trace) {
    if (!trace) write_trace();
    if (!trace->ok()) return trace->status();
    run.trace_written = true;
  }
  run.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  JsonOut summary_text;  // memory: the file and the database's run table hold the same text
  WriteSummaryJson(r, run, &summary_text);
  Result<AtomicFile> summary = WriteFile(out / "summary.json", mode, [&](JsonOut* o) { o->Raw(summary_text.view()); });
  if (!summary.ok()) return summary.status();
  if (db) {
    TRUFFLD_RETURN_IF_ERROR(db->Finish({VersionString(), (out / "trees.jsonl").string(),
                                        (out / "summary.json").string(), std::string(summary_text.view())}));
    TRUFFLD_RETURN_IF_ERROR(db->Commit());
  }
  TRUFFLD_RETURN_IF_ERROR(trees->Commit());
  TRUFFLD_RETURN_IF_ERROR(stats->Commit());
  if (trace) TRUFFLD_RETURN_IF_ERROR((*trace)->Commit());
  else TRUFFLD_RETURN_IF_ERROR(RemoveStaleOutput((out / "trace.json").string()));
  return summary->Commit();
}

// --step-window K:N into `opt`; false when it is not two integers K >= 0 and N >= 1.
bool ParseStepWindow(const std::string& v, MergeOptions* opt) {
  const size_t colon = v.find(':');
  if (colon == std::string::npos) return false;
  uint32_t k = 0, n = 0;
  const char* end = v.data() + v.size();
  auto rk = std::from_chars(v.data(), v.data() + colon, k);
  auto rn = std::from_chars(v.data() + colon + 1, end, n);
  if (rk.ec != std::errc() || rk.ptr != v.data() + colon || rn.ec != std::errc() || rn.ptr != end || n == 0) return false;
  opt->window_index = k;
  opt->window_steps = n;
  return true;
}

int Run(const Args& a) {
  auto t0 = std::chrono::steady_clock::now();
  MergeOptions opt;
  if (!a.step_window.empty() && !ParseStepWindow(a.step_window, &opt))
    return Fail(kExitUsage, "--step-window must be K:N (window index K >= 0, N >= 1 steps per window), got '" +
                                a.step_window + "'");
  opt.strict = a.strict;
  opt.threads = a.threads;
  opt.implicit_steps = !a.no_implicit;
  if (!a.rules_path.empty()) {
    auto rules = Rules::Load(a.rules_path);
    if (!rules.ok()) return Fail(kExitUsage, rules.status().ToString());
    opt.rules = std::move(*rules);
  }
  if (!a.request_regex.empty()) {
    Status st = opt.rules.SetRequestRegex(a.request_regex);
    if (!st.ok()) return Fail(kExitUsage, "--request-regex: " + st.message());
  }
  if (auto missing = MissingInput(a.inputs)) return Fail(kExitInput, *missing);
  RunInfo run;
  auto paths = ExpandInputs(a.inputs, &run.skipped_inputs);
  if (!paths.ok()) return Fail(kExitInput, paths.status().ToString());
  PrintSkipped(run.skipped_inputs, 0);
  if (paths->empty()) return Fail(kExitInput, "nothing to merge: no trace file among the inputs");
  std::error_code ec;
  std::filesystem::create_directories(a.outdir, ec);
  if (ec) return Fail(kExitOutput, a.outdir + ": cannot create directory: " + ec.message());
  auto lock = OutputLock::Acquire(a.outdir, "truffld-merge", a.wait_lock);  // held until exit
  if (!lock.ok()) return Fail(kExitOutput, lock.status().message());

  Progress progress(a.quiet);
  run.version = VersionString();
  run.tree_layout = a.per_request ? TreeLayout::kPerRequest : TreeLayout::kGrouped;
  std::vector<TraceFile> files;
  std::vector<Result<TraceFile>> imported;
  {
    ProgressTimer timer(progress, "reading " + std::to_string(paths->size()) + " file(s)...");
    ImportOptions io;
    io.strict = a.strict;
    io.keep_args = !a.no_trace;  // only trace.json shows them
    imported = ImportAll(*paths, io, a.threads);
  }
  const size_t skipped_before = run.skipped_inputs.size();
  DropRepeatedDumps(&*paths, &imported, &run.skipped_inputs);  // a stream that repeats an input
  PrintSkipped(run.skipped_inputs, skipped_before);
  run.inputs = *paths;
  for (size_t i = 0; i < imported.size(); ++i) {
    if (imported[i].ok()) { files.push_back(std::move(imported[i].value())); continue; }
    std::string why = imported[i].status().ToString();
    if (a.strict) return Fail(kExitInput, why);
    std::cerr << "truffld-merge: warning: skipping " << EscapeForTerminal((*paths)[i]) << ": " << EscapeForTerminal(why) << "\n";
    run.failed_inputs.emplace_back((*paths)[i], why);
  }
  if (files.empty()) return Fail(kExitInput, "nothing to merge: no input could be read");
  if (std::string why = NoEventsReason(files); !why.empty()) return Fail(kExitInput, "nothing to merge: " + why);
  std::optional<Result<MergeResult>> merged;
  {
    ProgressTimer timer(progress, "merging...");
    merged.emplace(Merge(std::move(files), opt));
  }
  if (!merged->ok()) return Fail(kExitInput, merged->status().ToString());
  const MergeResult& r = merged->value();
  Status st = WriteOutputs(a, r, run, progress, t0);
  if (!st.ok()) return Fail(kExitOutput, st.ToString());
  if (!a.quiet) std::cout << EscapeLinesForTerminal(FormatTextSummary(r, run));
  for (const FileSummary& f : r.summary.files)
    for (const IngestIssue& i : f.issues)
      if (&i - f.issues.data() < 5) std::cerr << "truffld-merge: " << EscapeForTerminal(i.where) << ": " << EscapeForTerminal(i.message) << "\n";
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "truffld-merge"};
  app.footer(std::string("\n") + kOutputLockHelp + kExitStatusHelp);
  AddVersionFlag(app, "truffld-merge");
  Args a;
  AddFlags(app, a);
  if (auto rc = ParseCommandLine(app, argc, argv)) return *rc;
  return Run(a);
}
