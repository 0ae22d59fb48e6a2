// Exit-status text, version line and terminal progress line (see truffld/cli.h).
#include "truffld/cli.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "truffld/terminal_text.h"

namespace truffld {

const char* const kExitStatusHelp =
    "Exit status: 0 success; 1 an input could not be used (missing, unreadable, nothing to read);\n"
    "2 usage error (a bad flag or value); 3 an output could not be written.\n";

const char* const kOutputLockHelp =
    "One run writes an OUTDIR at a time: a run holds an exclusive lock on OUTDIR/.truffld.lock\n"
    "(never followed if it is a symlink) while it works; a second run on the same OUTDIR exits 3\n"
    "at once naming the holder (tool and pid), or waits for it with --wait-lock.\n";

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

ProgressTimer::ProgressTimer(Progress& progress, std::string label)
    : progress_(progress), label_(std::move(label)) {
  if (!progress_.enabled()) return;
  thread_ = std::thread([this] {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    for (int seconds = 0; !stop_; ++seconds) {
      progress_.Say(label_ + " " + std::to_string(seconds) + " s");
      cv_.wait_until(lock, t0 + std::chrono::seconds(seconds + 1), [this] { return stop_; });
    }
  });
}

ProgressTimer::~ProgressTimer() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  progress_.Done();
}

}  // namespace truffld
