// The preview listener (preview.listen): its own address and port, never the MCP endpoint's, so
// a page a sandbox serves never shares the MCP endpoint's origin. Each exposed port is served at
// <label>.<preview.domain> (server/preview_table.h); PreviewConnection relays each browser
// connection through the agent. One I/O thread; opens (which may thaw or restore a session) run
// on a small pool. start()/stop() from one controlling thread; stats() from any.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "config/config.h"
#include "preview/preview_connection.h"
#include "server/session_registry.h"

namespace preview {

class PreviewListener {
 public:
  PreviewListener(const config::PreviewConfig& config, server::SessionRegistry& sessions);
  ~PreviewListener();  // stop()
  PreviewListener(const PreviewListener&) = delete;
  PreviewListener& operator=(const PreviewListener&) = delete;

  // Binds preview.listen, starts serving and tells the preview table the URLs it hands out.
  // Throws std::runtime_error naming the address when it cannot bind.
  void start();
  // Stops accepting, closes every connection (their sessions are no longer held) and joins.
  // Idempotent.
  void stop() noexcept;

  [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
  [[nodiscard]] const PreviewStats& stats() const noexcept { return context_->stats; }

  // The URL pattern for a listener bound to `port`: preview.public_url when set, else
  // "http://{label}.<domain>:<port>/".
  [[nodiscard]] static std::string urlPattern(const config::PreviewConfig& config,
                                              std::uint16_t port);

 private:
  struct IoState;
  void accept();

  const config::PreviewConfig& config_;
  server::SessionRegistry& sessions_;
  std::unique_ptr<IoState> io_;
  std::unique_ptr<PreviewContext> context_;
  std::thread thread_;
  std::uint16_t port_ = 0;
  bool stopped_ = false;
};

}  // namespace preview
