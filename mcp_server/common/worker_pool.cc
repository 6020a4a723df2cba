#include "common/worker_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <system_error>
#include <utility>

namespace common {

WorkerPool::WorkerPool(std::size_t min_threads, std::size_t max_threads, std::string name,
                       spdlog::logger* logger)
    : name_(std::move(name)),
      log_(logger != nullptr ? *logger : *spdlog::default_logger_raw()),
      max_threads_(std::max<std::size_t>({min_threads, max_threads, 1})),
      relay_(std::make_shared<CancelRelay>()) {
  relay_->pool = this;
  const std::size_t count = std::max<std::size_t>(min_threads, 1);
  std::lock_guard lock(mutex_);
  threads_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) threads_.emplace_back([this] { workerLoop(); });
}

std::size_t WorkerPool::size() {
  std::lock_guard lock(mutex_);
  return threads_.size();
}

WorkerPool::~WorkerPool() {
  shutdown();
  std::lock_guard lock(relay_->mutex);  // waits for a cancel callback that is running
  relay_->pool = nullptr;
}

bool WorkerPool::submit(Job job, const std::string& key, std::shared_ptr<CancelToken> cancel) {
  Entry entry{std::move(job), key, std::move(cancel)};
  if (entry.cancel && !key.empty()) subscribeToCancel(entry);
  std::unique_lock lock(mutex_);
  if (stopping_) {
    lock.unlock();
    if (entry.cancel) entry.cancel->unsubscribe(entry.subscription);
    return false;  // the job goes here, outside the mutex
  }
  enqueue(std::move(entry));
  lock.unlock();
  wake_.notify_one();
  return true;
}

// Subscribed before the job is queued, so no cancel is missed: one that fires from now on either
// finds the job waiting (the callback takes mutex_) or is seen by enqueue().
void WorkerPool::subscribeToCancel(Entry& entry) {
  entry.number = next_number_.fetch_add(1);
  entry.subscription =
      entry.cancel->subscribe([relay = relay_, key = entry.key, number = entry.number] {
        std::lock_guard lock(relay->mutex);
        if (relay->pool != nullptr) relay->pool->runCancelledNow(key, number);
      });
}

void WorkerPool::enqueue(Entry entry) {
  if (!entry.key.empty()) {
    auto [line, idle_key] = keyed_.try_emplace(entry.key);
    if (!idle_key) {
      if (!entry.cancel || !entry.cancel->cancelled()) {
        line->second.push_back(std::move(entry));  // runs when the key's current job is done
        return;
      }
      entry.key.clear();  // cancelled already: no reason to wait its turn
    }
  }
  queue_.push_back(std::move(entry));
  startWorkerIfNeeded();
}

// On the thread that cancelled the token. The job leaves its key's line (the others keep their
// order) and runs as soon as a worker is free.
void WorkerPool::runCancelledNow(const std::string& key, std::uint64_t number) {
  {
    std::lock_guard lock(mutex_);
    const auto line = keyed_.find(key);
    if (line == keyed_.end()) return;
    auto& waiting = line->second;
    const auto it = std::find_if(waiting.begin(), waiting.end(),
                                 [number](const Entry& entry) { return entry.number == number; });
    if (it == waiting.end()) return;  // started already
    Entry entry = std::move(*it);
    waiting.erase(it);
    entry.key.clear();  // out of the line: finishing it must not let the next one go
    queue_.push_back(std::move(entry));
    startWorkerIfNeeded();
  }
  wake_.notify_one();
}

void WorkerPool::startWorkerIfNeeded() {
  // Never once stopping: shutdown() joins the list without the mutex.
  if (stopping_ || queue_.size() <= idle_ || threads_.size() >= max_threads_) return;
  try {
    threads_.emplace_back([this] { workerLoop(); });
  } catch (const std::system_error& e) {  // out of threads: the queue still drains
    log_.warn("{}: cannot start another worker ({}); the job waits", name_, e.what());
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
    if (entry.cancel) entry.cancel->unsubscribe(entry.subscription);  // no longer waiting
    try {
      entry.job();
    } catch (const std::exception& e) {
      log_.error("{}: job threw: {}", name_, e.what());
    } catch (...) {
      log_.error("{}: job threw a non-standard exception", name_);
    }
    if (entry.key.empty()) continue;
    std::lock_guard lock(mutex_);
    const auto it = keyed_.find(entry.key);
    if (it->second.empty()) {
      keyed_.erase(it);
    } else {
      queue_.push_back(std::move(it->second.front()));
      it->second.pop_front();
      // This worker loops back and takes it (or another idle one does): no new thread needed.
    }
  }
}

}  // namespace common
