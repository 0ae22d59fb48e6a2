// Exit-status text, version line and terminal progress line (see truffld/cli.h).
#include "truffld/cli.h"

#include <unistd.h>

#include <cstdio>

#include "truffld/terminal_text.h"

namespace truffld {

const char* const kExitStatusHelp =
    "Exit status: 0 success; 1 an input could not be used (missing, unreadable, nothing to read);\n"
    "2 usage error (a bad flag or value); 3 an output could not be written.\n";

std::string VersionLine(const char* tool) { return std::string(tool) + " " + VersionString(); }

Progress::Progress(bool quiet) : enabled_(!quiet && ::isatty(STDERR_FILENO) != 0) {}

Progress::~Progress() { Done(); }

void Progress::Say(const std::string& text) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K%s", EscapeForTerminal(text).c_str());
  std::fflush(stderr);
  shown_ = true;
}

void Progress::Done() {
  if (!enabled_ || !shown_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace truffld
