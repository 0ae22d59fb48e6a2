// The merge's names for the shared string interner (truffld/string_pool.h, in common/).
#pragma once

#include "truffld/string_pool.h"

namespace truffld::merge {
using truffld::HashBytes;
using truffld::HashWords;
using truffld::kNoStr;
using truffld::ProcessHashSeed;
using truffld::StringPool;
using truffld::StrId;
}  // namespace truffld::merge
