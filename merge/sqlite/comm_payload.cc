// JsonInt, JsonText and the comm payload's members (see comm_payload.h).
#include "comm_payload.h"

#include <climits>

namespace truffld::rundb {

std::optional<int64_t> JsonInt(simdjson::dom::element e) {
  int64_t i = 0;
  if (e.get_int64().get(i) == simdjson::SUCCESS) return i;
  uint64_t u = 0;
  if (e.get_uint64().get(u) == simdjson::SUCCESS) return INT64_MAX;
  double d = 0;
  if (e.get_double().get(d) == simdjson::SUCCESS && d == d) {
    if (d >= 9.2e18) return INT64_MAX;
    if (d <= -9.2e18) return INT64_MIN;
    return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::optional<std::string> JsonText(simdjson::dom::element e) {
  std::string_view s;
  if (e.get_string().get(s) == simdjson::SUCCESS) return std::string(s);
  if (auto i = JsonInt(e)) return std::to_string(*i);
  return std::nullopt;
}

CommPayload CommPayloadOf(simdjson::dom::object p) {
  CommPayload c;
  simdjson::dom::element e;
  auto num = [&](const char* k) { return p[k].get(e) == simdjson::SUCCESS ? JsonInt(e) : std::nullopt; };
  if (p["comm"].get(e) == simdjson::SUCCESS) c.comm = JsonText(e);
  if (p["op"].get(e) == simdjson::SUCCESS) c.op = JsonText(e);
  c.bytes = num("bytes");
  c.world_size = num("world_size");
  c.rank = num("rank");
  c.root = num("root");
  c.peer = num("peer");
  return c;
}

CommPayload CommPayloadFromText(std::string_view json, simdjson::dom::parser* parser) {
  simdjson::padded_string copy(json);
  simdjson::dom::object o;
  if (parser->parse(copy).get_object().get(o) != simdjson::SUCCESS) return {};
  return CommPayloadOf(o);
}

}  // namespace truffld::rundb
