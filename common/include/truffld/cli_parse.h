// Command-line parsing shared by the truffld tools (CLI11): --version and the exit statuses.
//
// CLI11 reports a parse error with its own codes (105 a bad value, 106 a missing required
// option, 109 an unknown argument, ...); every truffld tool exits 2 for all of them instead, as
// documented in truffld/cli.h, and 0 for --help and --version.
// Header-only (CLI11 is header-only); link truffld_cli for VersionLine. Not thread-safe (parses
// argv once, on the main thread).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "truffld/cli.h"

namespace truffld {

// Adds --version (prints VersionLine(tool) on stdout) to `app`.
inline void AddVersionFlag(CLI::App& app, const char* tool) {
  app.set_version_flag("--version", VersionLine(tool), "print the version and exit");
}

// Parses argv. nullopt: go on. Otherwise the tool should exit with the returned status: 0 after
// --help/--version (printed), kExitUsage after a parse error (CLI11 printed the message).
inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  return std::nullopt;
}

}  // namespace truffld
