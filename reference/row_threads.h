// Rows on every core: body(r) for r in [0, rows), the rows independent of each other, on as
// many threads as the work pays for. Small inputs (a campaign's, which already runs one job per
// core) stay on the calling thread, where starting a thread would cost more than the rows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace nvfp4 {

// The most threads for_each_row starts from the calling thread (default: one per hardware
// thread); a benchmark sets 1 to time the single-threaded reference. Restored when it ends.
class RowThreadLimit {
 public:
  explicit RowThreadLimit(int threads) : saved_(limit()) { limit() = threads; }
  ~RowThreadLimit() { limit() = saved_; }
  RowThreadLimit(const RowThreadLimit&) = delete;
  RowThreadLimit& operator=(const RowThreadLimit&) = delete;
  static int current() { return limit() > 0 ? limit() : int(std::max(1u, std::thread::hardware_concurrency())); }

 private:
  static int& limit() {
    thread_local int threads = 0;  // 0: every hardware thread
    return threads;
  }
  int saved_;
};

// The least work of an element-wise pass over rows (amaxes, encoding) worth a thread of its own.
constexpr std::int64_t kRowElementsPerThread = 1 << 18;

// `work_per_row`, `work_per_thread`: in any unit (elements, block products), the least work that
// is worth a thread.
template <class Body>
void for_each_row(std::int64_t rows, std::int64_t work_per_row, std::int64_t work_per_thread, Body body) {
  const std::int64_t wanted = rows * work_per_row / std::max<std::int64_t>(work_per_thread, 1);
  const std::int64_t threads =
      std::clamp<std::int64_t>(std::min<std::int64_t>(RowThreadLimit::current(), wanted), 1, std::max<std::int64_t>(rows, 1));
  if (threads == 1) {
    for (std::int64_t r = 0; r < rows; ++r) body(r);
    return;
  }
  std::vector<std::thread> pool;
  for (std::int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::int64_t r = t; r < rows; r += threads) body(r);
    });
  for (std::thread& th : pool) th.join();
}

}  // namespace nvfp4
