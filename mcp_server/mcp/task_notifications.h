// The notifications of one client connection's tasks (progress, log lines, status changes) once
// the request that created a task has been answered. Over stdio they go out at once (the task's
// own direct sink, TaskRunner). Over Streamable HTTP a notification needs an open response
// stream: it waits here until a tasks/result request for its task attaches a listener, which
// receives the waiting ones and everything after, live.
// What waits is bounded, for this connection (`max_client_bytes`) and for all of them together
// (`server`): past either, the connection's oldest waiting notifications, of any of its tasks, go
// first. Each task counts what it lost, and its listener is told before the rest. Messages wait
// serialized, so the bound is the memory they hold. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>

#include "mcp/task_memory.h"

namespace mcp {

class TaskNotifications {
 public:
  using Sink = std::function<void(const nlohmann::json& message)>;

  // `server` (may be null) must outlive this object.
  TaskNotifications(std::size_t max_client_bytes, TaskMemory* server);
  ~TaskNotifications();  // gives the waiting bytes back to the server's budget
  TaskNotifications(const TaskNotifications&) = delete;
  TaskNotifications& operator=(const TaskNotifications&) = delete;

  // To the task's listener, or to wait for one. Messages of one task keep their order.
  void send(const std::string& task_id, const nlohmann::json& message);
  // Makes `listener` the task's receiver (replacing an earlier one), after handing it a notice of
  // what was dropped, if anything, and the waiting messages. Returns a key for detach(). A
  // listener runs under this object's lock: it must not call back into it.
  std::uint64_t attach(const std::string& task_id, Sink listener);
  // Stops sending to the listener attached under `key`, unless another replaced it since.
  void detach(const std::string& task_id, std::uint64_t key);
  // Drops what the task has waiting, and its listener: the task is gone.
  void forget(const std::string& task_id);

  [[nodiscard]] std::size_t dropped(const std::string& task_id);
  [[nodiscard]] std::size_t waitingBytes();

 private:
  struct Waiting {
    std::string task_id;
    std::string text;  // the serialized message
  };
  struct Listener {
    std::uint64_t key = 0;
    Sink sink;
  };

  void wait(const std::string& task_id, const nlohmann::json& message);  // mutex_ held
  void dropOldest();                                                     // mutex_ held

  const std::size_t max_client_bytes_;
  TaskMemory* const server_;
  std::mutex mutex_;            // held while a listener runs: messages keep their order
  std::list<Waiting> waiting_;  // oldest first, all tasks
  std::size_t waiting_bytes_ = 0;
  std::unordered_map<std::string, Listener> listeners_;
  struct Lost {
    std::size_t count = 0;
    std::size_t told = 0;  // of them, announced to a listener
  };
  std::unordered_map<std::string, Lost> dropped_;
  std::uint64_t next_key_ = 0;
};

}  // namespace mcp
