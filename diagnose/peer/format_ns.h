// FormatNs: the one duration format of verdict sentences ("412 us", "1.20 ms", "3.1 s"), shared by
// the peer detector's own sentences (insufficiency reasons, run findings) and the evidence of
// Stage II and the report. Pure; thread-safety: reentrant.
#pragma once

#include <string>

namespace truffld::diagnose {

// "412 us", "1.20 ms", "3.1 s" (3 significant digits; "us" for microseconds). ns may be negative.
std::string FormatNs(double ns);

}  // namespace truffld::diagnose
