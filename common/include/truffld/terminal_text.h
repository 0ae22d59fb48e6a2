// Text bound for a terminal: trace names made safe and short enough to print.
//
// Why: operator, kernel and step names come from traces, which anyone can write. Printed raw, an
// ESC sequence in a name can recolour, retitle or rewrite the user's terminal, a BEL rings it, a
// newline splits one table row into two; and a 1,000-character name makes a table unreadable.
// Every name a tool prints (merge's stderr, diagnose's stdout table) goes through these helpers.
// Pure functions; thread-safe. Widths count code points (one column each, close enough for
// operator names; wide CJK characters may take two).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace truffld {

// Control characters become visible escapes: C0 bytes and DEL as \n, \t, \r, \e (ESC) or \xNN,
// C1 controls (U+0080..U+009F, UTF-8 C2 80..C2 9F) as \u0080..\u009f, bidirectional controls
// (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) as \u200e etc., invisible format
// characters (U+00AD, U+180E, U+200B, U+2060..U+2064, U+206A..U+206F, U+FEFF, U+FFF9..U+FFFB)
// as \u00ad etc. and tag characters (U+E0001, U+E0020..U+E007F) as \U000e0001 etc., the
// backslash itself as \\ (so an escape in the output always stands for one in the input), and
// bytes that are not valid UTF-8 as \xNN. Everything else, UTF-8 included (ZWNJ and ZWJ too), is
// kept.
std::string EscapeForTerminal(std::string_view text);

// EscapeForTerminal applied to each line of `text`, the line breaks kept: a multi-line report
// (a summary, an evaluation table) made safe to print. Ends with "\n" when `text` is not empty.
std::string EscapeLinesForTerminal(std::string_view text);

// Number of code points in valid UTF-8 text (each invalid byte counts as one).
size_t DisplayWidth(std::string_view text);

// `text` cut to at most `max_width` code points, ending with an ellipsis ("…") when cut; never
// splits a UTF-8 sequence. max_width 0 gives "". Apply after EscapeForTerminal.
std::string TruncateForDisplay(std::string_view text, size_t max_width);

// EscapeForTerminal then TruncateForDisplay, padded with spaces to `width` code points: one table
// cell that never breaks the line or the column.
std::string TableCell(std::string_view text, size_t width);

}  // namespace truffld
