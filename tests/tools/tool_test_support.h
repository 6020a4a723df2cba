// What the tools unit tests share: a ToolContext over an in-memory session registry, and
// ClientUpdates that record what a tool tells the client.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/cancel_token.h"
#include "config/config.h"
#include "fake_backend.h"
#include "server/session_registry.h"
#include "tools/tool.h"

namespace testing_support {

class RecordingUpdates : public tools::ClientUpdates {
 public:
  RecordingUpdates(bool wants_progress, bool wants_logs)
      : progress_(wants_progress), logs_(wants_logs) {}

  struct Progress {
    std::uint64_t progress;
    std::string message;
  };
  struct Log {
    std::string logger;
    std::string text;
  };

  [[nodiscard]] bool wantsProgress() const noexcept override { return progress_; }
  [[nodiscard]] bool wantsLogs() const noexcept override { return logs_; }
  void progress(std::uint64_t progress, std::string message) override {
    std::lock_guard lock(mutex);
    progresses.push_back({progress, std::move(message)});
  }
  void log(std::string_view logger, std::string_view text) override {
    std::lock_guard lock(mutex);
    logs.push_back({std::string(logger), std::string(text)});
  }

  std::mutex mutex;
  std::vector<Progress> progresses;
  std::vector<Log> logs;

 private:
  const bool progress_;
  const bool logs_;
};

// A ToolContext for the owner "alice" over FakeBackend sessions.
struct ToolHarness {
  explicit ToolHarness(bool progress = false, bool logs = false) : updates(progress, logs) {
    cfg.pool.size = 0;  // no sandboxes made ahead: backend counts are the sessions'
  }

  tools::ToolContext context() {
    caller = {owner, owner, static_cast<std::size_t>(cfg.sessions.max_sessions_per_client),
              static_cast<std::size_t>(cfg.execution.max_concurrent_per_client)};
    return {caller, cancel, sessions(), cfg, updates};
  }
  server::SessionRegistry& sessions() {
    if (!registry) {
      registry = std::make_unique<server::SessionRegistry>(
          cfg, std::make_unique<server::SessionFactory>(cfg, backend));
    }
    return *registry;
  }

  const std::string owner = "alice";
  server::Caller caller;  // alice, as context() last made it
  CancelToken cancel;
  config::ServerConfig cfg;
  FakeBackend backend;
  RecordingUpdates updates;
  std::unique_ptr<server::SessionRegistry> registry;  // last: destroyed before the backend
};

}  // namespace testing_support
