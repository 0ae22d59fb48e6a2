// JSON members as the run database stores them: integers as int64 (a double is truncated, an
// unsigned past INT64_MAX saturates), texts as they are or integers in decimal, and a comm
// range's payload object as CommPayload. Shared by truffld-export (parsed trees.jsonl and
// diagnosis.jsonl lines) and truffld-merge --sqlite (payload texts held in memory), so both
// store the same values.
// Thread-safety: pure functions over the caller's parsed document or parser.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>

#include "row_builder.h"

namespace truffld::rundb {

std::optional<int64_t> JsonInt(simdjson::dom::element e);
// A payload value as text: strings as they are, integers in decimal; nullopt otherwise.
std::optional<std::string> JsonText(simdjson::dom::element e);

// comm, op, bytes, world_size, rank, root and peer of a payload object.
CommPayload CommPayloadOf(simdjson::dom::object p);
// The same from the payload's JSON text, parsed with `parser`; empty when it is not an object.
CommPayload CommPayloadFromText(std::string_view json, simdjson::dom::parser* parser);

}  // namespace truffld::rundb
