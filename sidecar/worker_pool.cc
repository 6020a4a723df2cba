#include "sidecar/worker_pool.h"

#include <algorithm>
#include <exception>

#include "sidecar/sidecar_log.h"

namespace sidecar {

WorkerPool::WorkerPool(std::size_t threads) {
  const std::size_t count = std::max<std::size_t>(threads, 1);
  threads_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) threads_.emplace_back([this] { run(); });
}

WorkerPool::~WorkerPool() { shutdown(); }

bool WorkerPool::submit(Job job) {
  {
    const std::lock_guard lock(mutex_);
    if (stopping_) return false;
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

void WorkerPool::shutdown() noexcept {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void WorkerPool::run() noexcept {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      job();
    } catch (const std::exception& e) {
      log().error("request worker: job threw: {}", e.what());
    } catch (...) {
      log().error("request worker: job threw a non-standard exception");
    }
  }
}

}  // namespace sidecar
