// truffld-export command line: thin adapter from flags to ExportRun (export_run.h) and the
// summaries (stats.h, stats_format.h).
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "export_run.h"
#include "schema_sql.h"
#include "sqlite_db.h"
#include "stats.h"
#include "stats_format.h"
#include "truffld/atomic_file.h"
#include "truffld/cli.h"
#include "truffld/cli_parse.h"
#include "truffld/terminal_text.h"

using namespace truffld;
using namespace truffld::exporter;

namespace {

constexpr const char* kDescription = R"(truffld-export: a merged run (and its diagnosis) as one SQLite database.

Reads a truffld-merge output directory (trees.jsonl[.gz|.zst], summary.json) and, with
--diagnosis, a truffld-diagnose output directory (diagnosis.jsonl), and writes DB with the tables
run, steps, requests, ops, api_calls, kernels, copies, syncs, collectives, verdicts and
faulty_ops, the views device_activity and collective_groups, and their indexes (README "Query
with SQL"; `sqlite3 DB .schema` shows every column with its comment). Each step, operator, call
and device op is one row, however many request trees held it. Lines that cannot be read are
counted, named (file:line) on stderr and in the run table; the rest is exported. The database is
written under a temporary name beside DB and renamed into place when complete.
truffld-merge --sqlite DB writes the same database while it merges; `--db DB --diagnosis DIR`
then adds the diagnosis to it (one transaction: a failure leaves DB as it was).
--stats prints the summaries of `nsys stats` and HTA computed from the database by SQL: kernel
time summary, GPU idle share per step, launch latency percentiles, compute/communication
overlap per rank; --stats-json writes them as JSON [schemas/stats-summary.schema.json].

Examples:
  truffld-export merged/ -o run.sqlite
  truffld-export merged/ --diagnosis diag/ -o run.sqlite --stats --stats-json stats-summary.json
  truffld-export --db run.sqlite --stats
  truffld-merge dumps/ -o merged/ --sqlite run.sqlite && truffld-diagnose merged/ -o diag/ &&
    truffld-export --db run.sqlite --diagnosis diag/
)";

struct Args {
  std::string merge_dir, diagnose_dir, output, db, stats_json;
  bool stats = false, quiet = false;
  size_t top = 20;
  int threads = 0;
};

int Fail(int code, const std::string& message) {
  std::cerr << "truffld-export: " << EscapeForTerminal(message) << "\n";
  return code;
}

void Report(const ExportResult& r, const std::string& out) {
  const TreeRowCounts& c = r.trees;
  std::cerr << "truffld-export: " << EscapeForTerminal(out) << ": " << c.steps << " steps, " << c.requests
            << " request rows, " << c.ops << " operators, " << c.calls << " API calls, " << c.kernels << " kernels, "
            << c.copies << " copies/memsets, " << c.collectives << " collectives";
  if (!r.diagnosis_path.empty()) std::cerr << ", " << r.verdicts << " verdicts, " << r.faulty_ops << " faulty operators";
  std::cerr << " (" << c.trees << " trees, " << c.duplicate_nodes << " repeated nodes merged)\n";
  if (c.bad_lines || r.bad_diagnosis_lines) {
    std::cerr << "truffld-export: skipped " << c.bad_lines << " bad tree lines and " << r.bad_diagnosis_lines
              << " bad diagnosis lines\n";
  }
  if (c.unknown_layers) std::cerr << "truffld-export: " << c.unknown_layers << " nodes of unknown layer skipped\n";
  if (c.reopened_steps) {
    std::cerr << "truffld-export: " << c.reopened_steps
              << " steps had their lines apart; nodes repeated across them may be exported twice\n";
  }
  for (const auto& p : c.problems) std::cerr << "truffld-export: " << EscapeForTerminal(p) << "\n";
  for (const auto& p : r.problems) std::cerr << "truffld-export: " << EscapeForTerminal(p) << "\n";
}

int Stats(const Args& a, const std::string& path) {
  auto db = SqliteDb::Open(path, SqliteDb::Mode::kReadOnly);
  if (!db.ok()) return Fail(kExitInput, db.status().message());
  auto schema = (*db)->Prepare("SELECT value FROM run WHERE key = 'schema'");
  Status st;
  if (!schema.ok() || !schema->Next(&st) || schema->Text(0) != kSqliteSchemaVersion) {
    return Fail(kExitInput, path + ": not a truffld-export database (" + std::string(kSqliteSchemaVersion) +
                                ")" + (schema.ok() ? "" : ": " + schema.status().message()));
  }
  auto stats = ComputeRunStats(db->get());
  if (!stats.ok()) return Fail(kExitInput, stats.status().message());
  if (!a.stats_json.empty()) {
    if (Status st = WriteFileAtomically(a.stats_json, RunStatsJson(*stats)); !st.ok()) {
      return Fail(kExitOutput, st.message());
    }
  }
  if (a.stats) std::cout << FormatStatsText(*stats, TextOptions{a.top, 10});
  return kExitOk;
}

int Run(const Args& a) {
  if (!a.db.empty()) {
    if (!a.merge_dir.empty() || !a.output.empty()) return Fail(kExitUsage, "--db reads a database: no MERGE_DIR or -o");
    if (!a.stats && a.stats_json.empty() && a.diagnose_dir.empty())
      return Fail(kExitUsage, "--db needs --diagnosis, --stats or --stats-json");
    if (!a.diagnose_dir.empty()) {
      bool input_failed = false;
      auto r = AddDiagnosis(a.db, a.diagnose_dir, &input_failed);
      if (!r.ok()) return Fail(input_failed ? kExitInput : kExitOutput, r.status().message());
      if (!a.quiet) {
        std::cerr << "truffld-export: " << EscapeForTerminal(a.db) << ": added " << r->verdicts << " verdicts, "
                  << r->faulty_ops << " faulty operators\n";
        for (const auto& p : r->problems) std::cerr << "truffld-export: " << EscapeForTerminal(p) << "\n";
      }
      if (!a.stats && a.stats_json.empty()) return kExitOk;
    }
    return Stats(a, a.db);
  }
  if (a.merge_dir.empty() || a.output.empty()) return Fail(kExitUsage, "MERGE_DIR and -o DB are required (or --db DB)");
  bool input_failed = false;
  auto r = ExportRun(ExportOptions{a.merge_dir, a.diagnose_dir, a.output, a.threads}, &input_failed);
  if (!r.ok()) return Fail(input_failed ? kExitInput : kExitOutput, r.status().message());
  if (!a.quiet) Report(*r, a.output);
  if (a.stats || !a.stats_json.empty()) return Stats(a, a.output);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "truffld-export"};
  app.footer(std::string("\n") + kExitStatusHelp);
  AddVersionFlag(app, "truffld-export");
  Args a;
  app.add_option("merge_dir", a.merge_dir, "truffld-merge output directory (or its trees.jsonl[.gz|.zst])");
  app.add_option("-o,--out", a.output, "SQLite database to write (replaced when complete)");
  app.add_option("--diagnosis", a.diagnose_dir, "truffld-diagnose output directory (or its diagnosis.jsonl)");
  app.add_option("--db", a.db,
                 "An existing database (truffld-merge --sqlite's or an export's) instead of exporting: with "
                 "--diagnosis, add the diagnosis' verdicts and faulty operators to it (once); with "
                 "--stats/--stats-json, summarise it");
  app.add_flag("--stats", a.stats, "Print the summaries (kernel time, GPU idle, launch latency, overlap)");
  app.add_option("--stats-json", a.stats_json, "Also write the summaries as JSON (stats-summary.json)");
  app.add_option("--top", a.top, "Kernel summary rows printed (0: all)")->capture_default_str();
  app.add_option("--threads", a.threads,
                 "Threads in all (0: one per core): one parses trees.jsonl, up to 3 write groups of tables")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("-q,--quiet", a.quiet, "No export report on stderr (problems still go to the run table)");
  if (auto rc = ParseCommandLine(app, argc, argv)) return *rc;
  return Run(a);
}
