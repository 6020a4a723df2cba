// sandbox-sidecar: relays HTTP from a sandbox's Unix socket to the MCP servers a policy allows,
// and with --egress-listen serves the session's egress proxy on a second socket.
// Wiring only: parse flags, load the policy, open the audit log, serve until SIGTERM/SIGINT.
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "sidecar/audit_log.h"
#include "sidecar/egress_proxy.h"
#include "sidecar/policy_file.h"
#include "sidecar/secret_headers.h"
#include "sidecar/sidecar_config.h"
#include "sidecar/sidecar_log.h"
#include "sidecar/sidecar_server.h"

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  const auto parsed = sidecar::parseCommandLine(args);
  if (parsed.help) {
    std::fputs(sidecar::usageText().c_str(), stdout);
    return 0;
  }
  if (!parsed.config) {
    std::fprintf(stderr, "sandbox-sidecar: %s\n%s", parsed.error.c_str(),
                 sidecar::usageText().c_str());
    return 2;
  }
  // Block the stop signals before any thread starts, so that only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that left is an error code, not a death
  try {
    auto policy = sidecar::loadPolicyFile(parsed.config->policy_file);
    auto audit =
        sidecar::AuditLog::open(parsed.config->audit_log_path, parsed.config->audit_log_max_bytes);
    std::shared_ptr<const sidecar::SecretHeaders> secrets;
    if (!parsed.config->secrets_file.empty()) {
      secrets = std::make_shared<const sidecar::SecretHeaders>(
          sidecar::SecretHeaders::load(parsed.config->secrets_file));
    }
    // The egress proxy starts first: the MCP server waits for the MCP socket only, so once that
    // accepts, the proxy's socket and CA files are there too.
    std::optional<sidecar::EgressProxy> egress;
    if (!parsed.config->egress_listen_path.empty()) {
      egress.emplace(*parsed.config, sidecar::loadEgressRulesFile(parsed.config->egress_rules_file),
                     audit, secrets);
      egress->start();
    }
    sidecar::SidecarServer server(*parsed.config, std::move(policy), audit, std::move(secrets));
    server.start();
    if (parsed.config->exit_on_stdin_eof) {
      // Detached on purpose: it blocks in read() until the parent goes away, then asks the main
      // thread to stop like a SIGTERM would.
      std::thread([] {
        char buffer[256];
        ssize_t n = 0;
        while ((n = read(STDIN_FILENO, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
        }
        sidecar::log().info("sidecar: stdin closed (the MCP server is gone), stopping");
        kill(getpid(), SIGTERM);
      }).detach();
    }
    int received = 0;
    sigwait(&stop_signals, &received);
    sidecar::log().info("sidecar: signal {} received, stopping", received);
    if (egress) egress->stop();
    server.stop();
  } catch (const std::exception& e) {
    sidecar::log().error("sandbox-sidecar: {}", e.what());
    return 1;
  }
  return 0;
}
