// Terminal-safe text: control bytes escaped (C0, DEL, C1, invalid UTF-8), UTF-8 kept, long text
// cut on a code point with an ellipsis, table cells of exact width.
#include "truffld/terminal_text.h"

#include <gtest/gtest.h>

namespace truffld {
namespace {

TEST(TerminalText, EscapesControlBytesAndKeepsUtf8) {
  EXPECT_EQ(EscapeForTerminal("plain name aten::mm"), "plain name aten::mm");
  EXPECT_EQ(EscapeForTerminal("a\x1b[31mb\x07\n\t\r\x7f"), "a\\e[31mb\\x07\\n\\t\\r\\x7f");
  EXPECT_EQ(EscapeForTerminal(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(EscapeForTerminal("back\\slash"), "back\\\\slash");
  EXPECT_EQ(EscapeForTerminal("caf\xC3\xA9 \xE2\x80\xA6"), "caf\xC3\xA9 \xE2\x80\xA6");
  EXPECT_EQ(EscapeForTerminal("csi\xC2\x9B" "2J"), "csi\\u009b2J");  // C1 CSI as UTF-8
  EXPECT_EQ(EscapeForTerminal("bad\xff\xc3("), "bad\\xff\\xc3(");   // invalid UTF-8
  EXPECT_EQ(EscapeForTerminal("\xED\xA0\x80"), "\\xed\\xa0\\x80");  // a surrogate
}

// Bidirectional controls reorder what follows them on screen (a U+202E in a family name makes
// the row read backwards), so they are escaped like other controls.
TEST(TerminalText, EscapesBidiControls) {
  EXPECT_EQ(EscapeForTerminal("op\xE2\x80\xAEmm::neta"), "op\\u202emm::neta");  // U+202E RLO
  EXPECT_EQ(EscapeForTerminal("\xE2\x80\xAA\xE2\x80\xAB\xE2\x80\xAC\xE2\x80\xAD"), "\\u202a\\u202b\\u202c\\u202d");
  EXPECT_EQ(EscapeForTerminal("\xE2\x81\xA6\xE2\x81\xA7\xE2\x81\xA8\xE2\x81\xA9"), "\\u2066\\u2067\\u2068\\u2069");
  EXPECT_EQ(EscapeForTerminal("\xE2\x80\x8E\xE2\x80\x8F"), "\\u200e\\u200f");  // LRM, RLM
  EXPECT_EQ(EscapeForTerminal("\xE2\x80\x8D\xE2\x80\xAF\xE2\x81\xA5"), "\xE2\x80\x8D\xE2\x80\xAF\xE2\x81\xA5");  // neighbours kept
}

// The Arabic letter mark is a bidirectional control too; invisible format characters make two
// different names print the same ("aten::mm" with a zero width space in it), and tag characters
// hide text outright: all are escaped. ZWNJ and ZWJ, which scripts and emoji need, are kept.
TEST(TerminalText, EscapesInvisibleFormatCharacters) {
  EXPECT_EQ(EscapeForTerminal("mm\xD8\x9C"), "mm\\u061c");                        // U+061C ALM
  EXPECT_EQ(EscapeForTerminal("aten::\xE2\x80\x8Bmm"), "aten::\\u200bmm");         // U+200B ZWSP
  EXPECT_EQ(EscapeForTerminal("\xC2\xAD\xE2\x81\xA0\xE2\x81\xA4\xEF\xBB\xBF"), "\\u00ad\\u2060\\u2064\\ufeff");
  EXPECT_EQ(EscapeForTerminal("\xE1\xA0\x8E\xE2\x81\xAA\xE2\x81\xAF\xEF\xBF\xB9\xEF\xBF\xBB"),
            "\\u180e\\u206a\\u206f\\ufff9\\ufffb");
  EXPECT_EQ(EscapeForTerminal("a\xF3\xA0\x80\x81\xF3\xA0\x81\x81\xF3\xA0\x81\xBF"), "a\\U000e0001\\U000e0041\\U000e007f");
  EXPECT_EQ(EscapeForTerminal("\xE2\x80\x8C\xE2\x80\x8D\xF3\xA0\x82\x80\xC2\xA0"),
            "\xE2\x80\x8C\xE2\x80\x8D\xF3\xA0\x82\x80\xC2\xA0");  // ZWNJ, ZWJ, U+E0080 (past the tags), NBSP kept
}

TEST(TerminalText, EscapesLineByLine) {
  EXPECT_EQ(EscapeLinesForTerminal("a\x1b\nb\r\n"), "a\\e\nb\\r\n");
  EXPECT_EQ(EscapeLinesForTerminal("no newline"), "no newline\n");
  EXPECT_EQ(EscapeLinesForTerminal(""), "");
}

TEST(TerminalText, TruncatesOnCodePointsWithAnEllipsis) {
  EXPECT_EQ(TruncateForDisplay("short", 10), "short");
  EXPECT_EQ(TruncateForDisplay("exactly10!", 10), "exactly10!");
  EXPECT_EQ(TruncateForDisplay("0123456789abc", 10), "012345678\xE2\x80\xA6");
  EXPECT_EQ(DisplayWidth(TruncateForDisplay(std::string(1000, 'x'), 40)), 40u);
  EXPECT_EQ(TruncateForDisplay("\xC3\xA9\xC3\xA9\xC3\xA9", 2), "\xC3\xA9\xE2\x80\xA6");
  EXPECT_EQ(TruncateForDisplay("abc", 0), "");
}

TEST(TerminalText, TableCellsHaveTheirWidth) {
  EXPECT_EQ(TableCell("ab", 5), "ab   ");
  EXPECT_EQ(DisplayWidth(TableCell(std::string(300, 'y') + "\x1b", 40)), 40u);
  EXPECT_EQ(TableCell("a\nb", 6), "a\\nb  ");
}

}  // namespace
}  // namespace truffld
