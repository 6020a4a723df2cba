// Threads that run blocking jobs (Endpoint::handle, Endpoint::close) so that I/O threads never
// block. The pool starts with `min_threads` and adds one whenever a job would otherwise wait, up to
// `max_threads`: a tool call that blocks for minutes in one session must not hold up calls to
// other sessions. Threads are not retired (an idle one costs a stack and nothing else).
// Thread-safe: submit() and shutdown() may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace transport {

class WorkerPool {
 public:
  using Job = std::function<void()>;

  // Starts `min_threads` workers (at least one) and grows to `max_threads` (at least
  // min_threads) on demand. `name` appears in log lines about failing jobs.
  WorkerPool(std::size_t min_threads, std::size_t max_threads, std::string name = "workers");
  // A fixed size pool.
  explicit WorkerPool(std::size_t threads, std::string name = "workers")
      : WorkerPool(threads, threads, std::move(name)) {}
  ~WorkerPool();  // shutdown()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a job. Jobs with the same non-empty `key` run one at a time, in submission order (the
  // next waits without holding a thread). Returns false (and drops the job) once shutdown() has
  // begun. A job that throws is logged and swallowed; the worker keeps running.
  [[nodiscard]] bool submit(Job job, const std::string& key = {});

  // Stops accepting jobs, runs the ones already queued, and joins the workers. Idempotent.
  // Must not be called from a worker thread.
  void shutdown() noexcept;

  [[nodiscard]] std::size_t size();

 private:
  struct Entry {
    Job job;
    std::string key;
  };
  void workerLoop() noexcept;
  void startWorkerIfNeeded();  // mutex_ held

  std::string name_;
  std::size_t max_threads_;
  std::size_t idle_ = 0;  // workers waiting for a job
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Entry> queue_;
  // Keys with a job queued or running, and the jobs waiting behind it.
  std::unordered_map<std::string, std::deque<Job>> keyed_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace transport
