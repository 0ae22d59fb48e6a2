// Private to the Kineto importer: repair of a truncated trace document (see the .cc).
// Thread-safety: pure function.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace truffld::merge::kineto {

struct Salvaged {
  std::string text;       // doc[0, kept_bytes) + the closing brackets it needs
  size_t kept_bytes = 0;  // how much of the original survived
};

// For a document that ends with brackets still open, the longest prefix ending after a complete
// element of the events array (a top-level member's array, or the top-level array), closed again; nullopt when the document is balanced or nothing
// complete can be kept.
std::optional<Salvaged> SalvageTruncatedJson(std::string_view doc);

}  // namespace truffld::merge::kineto
