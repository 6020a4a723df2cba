// One line per sandbox session of a connection: executions naming the same session run one at a
// time, in the order they took their place. The transports already hand tools/call requests of one
// session to the endpoint in arrival order (one cancelled while it waits there comes early and
// takes no place); a task keeps its place after its request was answered, so later calls (tasks or
// not) still wait for it. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/cancel_token.h"

namespace mcp {

class SessionLanes {
 public:
  // A place in a line, taken by enqueue(); leaving it (destruction) lets the next one go.
  class Place {
   public:
    Place() = default;
    Place(SessionLanes* lanes, std::string key, std::uint64_t number)
        : lanes_(lanes), key_(std::move(key)), number_(number) {}
    Place(Place&& other) noexcept
        : lanes_(other.lanes_), key_(std::move(other.key_)), number_(other.number_) {
      other.lanes_ = nullptr;
    }
    Place& operator=(Place&& other) noexcept {
      if (this != &other) {
        leave();
        lanes_ = other.lanes_;
        key_ = std::move(other.key_);
        number_ = other.number_;
        other.lanes_ = nullptr;
      }
      return *this;
    }
    Place(const Place&) = delete;
    Place& operator=(const Place&) = delete;
    ~Place() { leave(); }

    // Blocks until this place is first in its line; false (and the place is left) when `cancel`
    // fires first. A place without a line (empty key) goes at once.
    [[nodiscard]] bool waitTurn(CancelToken& cancel);
    // True when this place is first in its line now (a place without a line always is).
    [[nodiscard]] bool isFirst() const;
    // Runs `go` once, when this place is first in its line, without a thread waiting for it: at
    // once on this thread when it is first already, else on the thread whose leave() makes it
    // first (so `go` must be quick: hand work to a thread of its own). A place left before its
    // turn never runs it.
    void whenTurn(std::function<void()> go);
    void leave() noexcept;

   private:
    SessionLanes* lanes_ = nullptr;
    std::string key_;
    std::uint64_t number_ = 0;
  };

  // Joins the end of `key`'s line now. An empty key has no line.
  [[nodiscard]] Place enqueue(const std::string& key);

  [[nodiscard]] std::size_t lineCount();

 private:
  struct Waiting {
    std::uint64_t number;
    std::function<void()> go;  // whenTurn(); empty for a blocking waitTurn() or none yet
  };

  std::mutex mutex_;
  std::condition_variable moved_;
  std::uint64_t next_number_ = 1;
  std::unordered_map<std::string, std::deque<Waiting>> lines_;
};

}  // namespace mcp
