// A fixed set of threads that run blocking jobs (Endpoint::handle, Endpoint::close) so that I/O
// threads never block. Thread-safe: submit() and shutdown() may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace transport {

class WorkerPool {
 public:
  using Job = std::function<void()>;

  // Starts `threads` workers (at least one). `name` appears in log lines about failing jobs.
  explicit WorkerPool(std::size_t threads, std::string name = "workers");
  ~WorkerPool();  // shutdown()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a job. Returns false (and drops the job) once shutdown() has begun.
  // A job that throws is logged and swallowed; the worker keeps running.
  [[nodiscard]] bool submit(Job job);

  // Stops accepting jobs, runs the ones already queued, and joins the workers. Idempotent.
  // Must not be called from a worker thread.
  void shutdown() noexcept;

  [[nodiscard]] std::size_t size() const noexcept { return threads_.size(); }

 private:
  void workerLoop() noexcept;

  std::string name_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace transport
