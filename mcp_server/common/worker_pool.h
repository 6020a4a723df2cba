// Threads that run blocking jobs so that I/O threads never block: the transports' requests
// (Endpoint::handle, Endpoint::close) and the sidecar's (getaddrinfo, libcurl). The pool starts
// with `min_threads` and adds one whenever a job would otherwise wait, up to `max_threads`: a tool
// call that blocks for minutes in one session must not hold up calls to other sessions. Threads
// are not retired (an idle one costs a stack and nothing else). Compiled into mcp_base, which the
// server and the sidecar link and the in-sandbox agent does not.
// Thread-safe: submit() and shutdown() may be called from any thread.
#pragma once

#include <spdlog/fwd.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/cancel_token.h"

namespace common {

class WorkerPool {
 public:
  using Job = std::function<void()>;

  // Starts `min_threads` workers (at least one) and grows to `max_threads` (at least
  // min_threads) on demand. `name` appears in log lines about failing jobs; they go to `logger`
  // (the component's own, which must outlive the pool), or to spdlog's default logger when null.
  WorkerPool(std::size_t min_threads, std::size_t max_threads, std::string name = "workers",
             spdlog::logger* logger = nullptr);
  // A fixed size pool.
  explicit WorkerPool(std::size_t threads, std::string name = "workers",
                      spdlog::logger* logger = nullptr)
      : WorkerPool(threads, threads, std::move(name), logger) {}
  ~WorkerPool();  // shutdown(); cancel tokens may outlive the pool
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a job. Jobs with the same non-empty `key` run one at a time, in submission order (the
  // next waits without holding a thread). When `cancel` fires while the job waits behind its key,
  // the job leaves the line and runs at once, out of order: it is expected to see the token and
  // return quickly. The rest of the line keeps its order. Returns false (and drops the job) once
  // shutdown() has begun. A job that throws is logged and swallowed; the worker keeps running.
  [[nodiscard]] bool submit(Job job, const std::string& key = {},
                            std::shared_ptr<CancelToken> cancel = nullptr);

  // Stops accepting jobs, runs the ones already queued, and joins the workers. Idempotent.
  // Must not be called from a worker thread.
  void shutdown() noexcept;

  [[nodiscard]] std::size_t size();

 private:
  struct Entry {
    Job job;
    std::string key;  // empty: finishing the job lets no other one go
    std::shared_ptr<CancelToken> cancel;
    std::uint64_t number = 0;        // names the job to its cancel callback; 0 without one
    std::uint64_t subscription = 0;  // on `cancel`, dropped when the job starts
  };
  // Cancel callbacks reach the pool through this, so that one running on another thread just as
  // the pool is destroyed finds nothing instead of a dangling pointer.
  struct CancelRelay {
    std::mutex mutex;
    WorkerPool* pool = nullptr;
  };
  void workerLoop() noexcept;
  void subscribeToCancel(Entry& entry);
  void enqueue(Entry entry);  // mutex_ held
  void runCancelledNow(const std::string& key, std::uint64_t number);
  void startWorkerIfNeeded();  // mutex_ held

  std::string name_;
  spdlog::logger& log_;
  std::size_t max_threads_;
  std::size_t idle_ = 0;  // workers waiting for a job
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Entry> queue_;
  // Keys with a job queued or running, and the jobs waiting behind it.
  std::unordered_map<std::string, std::deque<Entry>> keyed_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> next_number_{1};
  std::shared_ptr<CancelRelay> relay_;
};

}  // namespace common
