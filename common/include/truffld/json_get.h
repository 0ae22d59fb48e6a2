// Typed reads of user-written JSON (rules files, labels, reference data) that never throw.
//
// nlohmann::json's value() and get<T>() throw on a member of the wrong type, and an exception
// that leaves a stage aborts the tool. These return a Result instead: an absent member (or
// null, where allowed) gives the default; a member of the wrong type gives an InvalidArgument
// naming where it is ("rules.json: rules[2]"), the member and the type wanted, so the caller
// reports it like any other bad input. Header-only over nlohmann::json.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "truffld/status.h"

namespace truffld::json {

namespace detail {
inline Status WrongType(std::string_view where, std::string_view key, const char* want, const nlohmann::json& v) {
  return InvalidArgument(std::string(where) + ": \"" + std::string(key) + "\" must be " + want + ", not " +
                         v.type_name());
}
// The member `key` of `obj` (nullptr when obj is no object, lacks it, or holds null there).
inline const nlohmann::json* Member(const nlohmann::json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}
}  // namespace detail

inline Result<bool> GetBool(const nlohmann::json& obj, std::string_view key, bool def, std::string_view where) {
  const nlohmann::json* v = detail::Member(obj, key);
  if (!v) return def;
  if (!v->is_boolean()) return detail::WrongType(where, key, "true or false", *v);
  return v->get<bool>();
}

inline Result<std::string> GetString(const nlohmann::json& obj, std::string_view key, std::string def,
                                     std::string_view where) {
  const nlohmann::json* v = detail::Member(obj, key);
  if (!v) return def;
  if (!v->is_string()) return detail::WrongType(where, key, "a string", *v);
  return v->get<std::string>();
}

// An integer (a JSON number without a fractional part that fits int64).
inline Result<int64_t> GetInt(const nlohmann::json& obj, std::string_view key, int64_t def, std::string_view where) {
  const nlohmann::json* v = detail::Member(obj, key);
  if (!v) return def;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX))
      return detail::WrongType(where, key, "an integer that fits 64 bits", *v);
    return v->get<int64_t>();
  }
  return detail::WrongType(where, key, "an integer", *v);
}

inline Result<double> GetNumber(const nlohmann::json& obj, std::string_view key, double def, std::string_view where) {
  const nlohmann::json* v = detail::Member(obj, key);
  if (!v) return def;
  if (!v->is_number()) return detail::WrongType(where, key, "a number", *v);
  return v->get<double>();
}

// The array member `key` (nullptr when absent or null), or an error when it is not an array.
inline Result<const nlohmann::json*> GetArray(const nlohmann::json& obj, std::string_view key, std::string_view where) {
  const nlohmann::json* v = detail::Member(obj, key);
  if (v && !v->is_array()) return detail::WrongType(where, key, "an array", *v);
  return v;
}

}  // namespace truffld::json
