// JsonLine / AppendJsonString: see json_out.h.
#include "json_out.h"

#include <cmath>
#include <cstdio>

namespace truffld::inject {

namespace {
void AppendNumber(std::string& out, double v) {
  if (!std::isfinite(v)) { out += "null"; return; }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  out += buf;
}
}  // namespace

JsonLine& JsonLine::Double(const char* key, double v) { Key(key); AppendNumber(out_, v); return *this; }

JsonLine& JsonLine::Triple(const char* key, int64_t x, int64_t y, int64_t z) {
  Key(key);
  out_.push_back('[');
  AppendInt(out_, x);
  out_.push_back(',');
  AppendInt(out_, y);
  out_.push_back(',');
  AppendInt(out_, z);
  out_.push_back(']');
  return *this;
}

JsonObject& JsonObject::Double(std::string_view key, double v) { Key(key); AppendNumber(s_, v); return *this; }

}  // namespace truffld::inject
