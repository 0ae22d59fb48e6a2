// ParseTreesInBackground: trees.jsonl parsed on a second thread into RowBatches while the caller
// inserts the rows of the previous batch into SQLite (row_batch.h says why). The parser thread
// fills batches of about kBatchRows rows and hands them over through a queue of at most kQueued
// batches, so memory stays bounded whatever the file's size.
// Thread-safety: the callback runs on the calling thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "row_batch.h"
#include "tree_rows.h"

namespace truffld::exporter {

// Reads `path` line by line into `rows` on a background thread and calls `consume` on the
// calling thread with each full batch, in file order (shared: the consumer may hand it on). Returns the reader's status (naming the
// file; *reader_failed is then set), or the first error `consume` returned (the parser is then
// stopped).
Status ParseTreesInBackground(const std::string& path, TreeRows* rows,
                              const std::function<Status(std::shared_ptr<const RowBatch>)>& consume, bool* reader_failed);

}  // namespace truffld::exporter
