#include "transport/worker_pool.h"

#include <algorithm>
#include <exception>
#include <system_error>
#include <utility>

#include "transport/transport_log.h"

namespace transport {

WorkerPool::WorkerPool(std::size_t min_threads, std::size_t max_threads, std::string name)
    : name_(std::move(name)), max_threads_(std::max<std::size_t>({min_threads, max_threads, 1})) {
  const std::size_t count = std::max<std::size_t>(min_threads, 1);
  std::lock_guard lock(mutex_);
  threads_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) threads_.emplace_back([this] { workerLoop(); });
}

std::size_t WorkerPool::size() {
  std::lock_guard lock(mutex_);
  return threads_.size();
}

WorkerPool::~WorkerPool() { shutdown(); }

bool WorkerPool::submit(Job job, const std::string& key) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return false;
    if (!key.empty()) {
      auto [it, idle_key] = keyed_.try_emplace(key);
      if (!idle_key) {
        it->second.push_back(std::move(job));  // runs when the key's current job is done
        return true;
      }
    }
    queue_.push_back({std::move(job), key});
    startWorkerIfNeeded();
  }
  wake_.notify_one();
  return true;
}

void WorkerPool::startWorkerIfNeeded() {
  if (queue_.size() <= idle_ || threads_.size() >= max_threads_) return;
  try {
    threads_.emplace_back([this] { workerLoop(); });
  } catch (const std::system_error& e) {  // out of threads: the queue still drains
    log().warn("{}: cannot start another worker ({}); the job waits", name_, e.what());
  }
}

void WorkerPool::shutdown() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  // No thread is added once stopping_ is set, so the list is stable here.
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void WorkerPool::workerLoop() noexcept {
  for (;;) {
    Entry entry;
    {
      std::unique_lock lock(mutex_);
      ++idle_;
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      --idle_;
      // Queued work still runs after shutdown() so that accepted requests get their answers.
      if (queue_.empty()) return;
      entry = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      entry.job();
    } catch (const std::exception& e) {
      log().error("{}: job threw: {}", name_, e.what());
    } catch (...) {
      log().error("{}: job threw a non-standard exception", name_);
    }
    if (entry.key.empty()) continue;
    std::lock_guard lock(mutex_);
    const auto it = keyed_.find(entry.key);
    if (it->second.empty()) {
      keyed_.erase(it);
    } else {
      queue_.push_back({std::move(it->second.front()), entry.key});
      it->second.pop_front();
      // This worker loops back and takes it (or another idle one does): no new thread needed.
    }
  }
}

}  // namespace transport
