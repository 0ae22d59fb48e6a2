// FormatNs: the one duration format of verdict sentences ("412 us", "1.20 ms", "3.1 s"), shared by
// the peer detector's own sentences (insufficiency reasons, run findings) and the evidence of
// Stage II and the report. Pure; thread-safety: reentrant.
#pragma once

#include <string>

namespace truffld::diagnose {

// "412 us", "1.20 ms", "3.1 s" (3 significant digits; "us" for microseconds). ns may be negative.
std::string FormatNs(double ns);
// One number through a printf format taking a double ("%.2g", "%.1f%%"); at most 63 characters.
std::string FormatNumber(const char* format, double v);
// "their z-scores centre at 10.2, spread 13.0": a view's empirical null (decision.h), as the
// unit evidence and the run's calibration note both say it.
std::string NullFiguresText(double centre, double scale);

}  // namespace truffld::diagnose
