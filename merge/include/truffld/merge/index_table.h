// The merge's name for the shared open-addressing index set (truffld/index_table.h, in common/).
#pragma once

#include "truffld/index_table.h"

namespace truffld::merge {
using truffld::IndexTable;
}  // namespace truffld::merge
