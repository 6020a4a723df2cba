// Changes to an owner's resource list (resources/list), told to whoever listens (the MCP
// server's listen streams): a session saved a new file for the client, or a session that had such
// files ended. The registry and its sessions share one; the MCP server sets the listener for as
// long as it lives. Thread-safe. The listener runs under this object's lock, so that clearing
// it waits for a call in flight: it must be quick and must not call back into it.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <utility>

namespace server {

class ResourceEvents {
 public:
  using Listener = std::function<void(const std::string& owner)>;

  // An empty listener stops the calls.
  void setListener(Listener listener) {
    const std::lock_guard lock(mutex_);
    listener_ = std::move(listener);
  }

  void listChanged(const std::string& owner) {
    const std::lock_guard lock(mutex_);
    if (listener_) listener_(owner);
  }

 private:
  std::mutex mutex_;
  Listener listener_;
};

}  // namespace server
