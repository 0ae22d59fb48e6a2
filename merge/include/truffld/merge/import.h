// Importer entry points shared by every input format of truffld-merge.
// Thread-safety: plain options struct; importers are reentrant (one call per file).
#pragma once

namespace truffld::merge {

struct ImportOptions {
  bool strict = false;  // any reported problem becomes a fatal error
};

}  // namespace truffld::merge
