// The background parser (see row_batches.h).
#include "row_batches.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "truffld/line_reader.h"

namespace truffld::exporter {

namespace {

constexpr size_t kQueued = 3;

// Batches handed from the parser thread to the consumer.
struct Queue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::unique_ptr<RowBatch>> batches;
  bool done = false, stop = false;
  Status status;  // the reader's, set with done
};

void Produce(const std::string& path, TreeRows* rows, Queue* q) {
  StringIds ids;
  auto hand_over = [q](std::unique_ptr<RowBatch> b, bool done, Status st) {
    std::unique_lock<std::mutex> lock(q->mu);
    q->cv.wait(lock, [q] { return q->batches.size() < kQueued || q->stop; });
    if (b) q->batches.push_back(std::move(b));
    if (done) {
      q->done = true;
      q->status = std::move(st);
    }
    q->cv.notify_all();
    return !q->stop;
  };
  auto reader = LineReader::Open(path);
  if (!reader.ok()) {
    hand_over(nullptr, true, reader.status());
    return;
  }
  auto batch = std::make_unique<RowBatch>(&ids);
  std::string_view line;
  while ((*reader)->Next(&line)) {
    (void)rows->AddLine(line, path, (*reader)->line_number(), batch.get());  // a RowBatch never fails
    if (batch->rows() >= kBatchRows) {
      auto next = std::make_unique<RowBatch>(&ids);
      next->ReserveLike(*batch);
      if (!hand_over(std::move(batch), false, Status::Ok())) return;
      batch = std::move(next);
    }
  }
  for (const LineWarning& w : (*reader)->warnings()) rows->AddProblem(w.message);
  hand_over(std::move(batch), true, (*reader)->status());
}

}  // namespace

Status ParseTreesInBackground(const std::string& path, TreeRows* rows,
                              const std::function<Status(std::shared_ptr<const RowBatch>)>& consume, bool* reader_failed) {
  Queue q;
  std::thread parser(Produce, path, rows, &q);
  Status result;
  for (;;) {
    std::shared_ptr<const RowBatch> b;
    {
      std::unique_lock<std::mutex> lock(q.mu);
      q.cv.wait(lock, [&q] { return !q.batches.empty() || q.done; });
      if (q.batches.empty()) {
        result = q.status;
        *reader_failed = !result.ok();
        break;
      }
      b = std::move(q.batches.front());
      q.batches.pop_front();
      q.cv.notify_all();
    }
    if (Status st = consume(std::move(b)); !st.ok()) {
      std::lock_guard<std::mutex> lock(q.mu);
      q.stop = true;
      q.cv.notify_all();
      result = st;
      break;
    }
  }
  parser.join();
  return result;
}

}  // namespace truffld::exporter
