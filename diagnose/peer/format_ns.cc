// The duration format of verdict sentences (see format_ns.h).
#include "peer/format_ns.h"

#include <cmath>
#include <cstdio>

namespace truffld::diagnose {

std::string FormatNumber(const char* format, double v) {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

std::string NullFiguresText(double centre, double scale) {
  return "their z-scores centre at " + FormatNumber("%.1f", centre) + ", spread " + FormatNumber("%.1f", scale);
}

namespace {
std::string Fmt(const char* f, double v) { return FormatNumber(f, v); }
}  // namespace

std::string FormatNs(double ns) {
  const double a = std::abs(ns);
  if (a < 1e3) return Fmt("%.0f ns", ns);
  if (a < 1e6) return Fmt(a < 1e4 ? "%.2f us" : a < 1e5 ? "%.1f us" : "%.0f us", ns / 1e3);
  if (a < 1e9) return Fmt(a < 1e7 ? "%.2f ms" : a < 1e8 ? "%.1f ms" : "%.0f ms", ns / 1e6);
  return Fmt("%.3g s", ns / 1e9);
}

}  // namespace truffld::diagnose
