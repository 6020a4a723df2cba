// A fixed set of threads for the blocking part of every request (getaddrinfo, libcurl), so the
// io_context thread never blocks. Thread-safety: submit() and shutdown() may be called from any
// thread but a worker.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sidecar {

class WorkerPool {
 public:
  using Job = std::function<void()>;

  explicit WorkerPool(std::size_t threads);
  ~WorkerPool();  // shutdown()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Returns false (and drops the job) once shutdown() has begun.
  [[nodiscard]] bool submit(Job job);
  // Stops accepting jobs, runs those already queued, joins the threads. Idempotent.
  void shutdown() noexcept;

 private:
  void run() noexcept;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace sidecar
