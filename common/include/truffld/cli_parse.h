// Command-line parsing shared by the truffld tools (CLI11): --version and the exit statuses.
//
// CLI11 reports a parse error with its own codes (105 a bad value, 106 a missing required
// option, 109 an unknown argument, ...); every truffld tool exits 2 for all of them instead, as
// documented in truffld/cli.h, and 0 for --help and --version.
// Header-only (CLI11 is header-only); link truffld_cli for VersionLine. Not thread-safe (parses
// argv once, on the main thread).
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "truffld/cli.h"

namespace truffld {

// Adds --version (prints VersionLine(tool) on stdout) to `app`.
inline void AddVersionFlag(CLI::App& app, const char* tool) {
  app.set_version_flag("--version", VersionLine(tool), "print the version and exit");
}

// A floating-point flag's check: a finite number in [lo, hi]. CLI11's Range lets NaN through
// (every comparison with NaN is false). Its --help text is Range's ("FLOAT in [lo - hi]").
inline CLI::Validator FiniteRange(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& input) -> std::string {
        double v = 0;
        if (CLI::detail::lexical_cast(input, v) && std::isfinite(v) && v >= lo && v <= hi) return {};
        std::ostringstream msg;
        msg << "must be a finite number";
        if (lo > -std::numeric_limits<double>::max() || hi < std::numeric_limits<double>::max()) {
          msg << " in [" << lo << ", " << hi << "]";
        }
        msg << ", got '" << input << "'";
        return msg.str();
      },
      CLI::Range(lo, hi).get_description());
}

// The same for a flag without bounds: any finite number; --help shows no extra text.
inline CLI::Validator Finite() {
  const double max = std::numeric_limits<double>::max();
  CLI::Validator v = FiniteRange(-max, max);
  v.description("");
  return v;
}

// CLI11's help formatter without the "{false}" it prints after a negatable flag
// ("--x,--no-x{false}"), which reads as "off by default"; each such flag says its default in
// its text.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    std::string s = CLI::Formatter::make_option_name(opt, positional);
    for (const std::string tag : {"{false}", "{true}"}) {
      for (size_t p; (p = s.find(tag)) != std::string::npos;) s.erase(p, tag.size());
    }
    return s;
  }
};

// Parses argv (the app takes the program's file name, argv[0] without its folder, unless it has
// a name). nullopt: go on. Otherwise the tool should exit with the returned status: 0 after
// --help/--version (printed), kExitUsage after a parse error (CLI11 printed the message, after
// the tool's name: "truffld-diagnose: --flag: reason").
inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  // --help's usage line names the program, not the path it was started by.
  if (app.get_name().empty() && argc > 0) app.name(std::filesystem::path(argv[0]).filename().string());
  auto formatter = std::make_shared<HelpFormatter>();
  formatter->column_width(app.get_formatter()->get_column_width());
  app.formatter(formatter);
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    const std::string tool = std::filesystem::path(a->get_name()).filename().string();
    return (tool.empty() ? std::string() : tool + ": ") + CLI::FailureMessage::simple(a, e);
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  return std::nullopt;
}

}  // namespace truffld
