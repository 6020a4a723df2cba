// sandbox-mcp: an MCP server that runs untrusted code in gVisor-isolated Docker sandboxes.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "app/cli_options.h"
#include "app/server_app.h"
#include "common/malloc_tuning.h"
#include "sandbox/docker/freeze_witness.h"

int main(int argc, char** argv) {
  // The process that thaws what a crashed server left frozen (freeze_witness.h).
  if (argc == 2 && std::string(argv[1]) == "--freeze-witness") {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) std::signal(sig, SIG_IGN);
    return sandbox::docker::runFreezeWitness(std::cin);
  }
  sandbox::docker::FreezeWitness::instance().useProgram("/proc/self/exe");
  common::tuneMallocForLargeMessages();
  app::CliOptions options;
  try {
    options = app::parseCli(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const app::UsageError& e) {
    std::fprintf(stderr, "sandbox-mcp: %s\n\n%s", e.what(), app::usageText());
    return 2;
  }
  switch (options.mode) {
    case app::Mode::kHelp:
      std::fputs(app::usageText(), stdout);
      return 0;
    case app::Mode::kVersion:
      std::puts("sandbox-mcp 0.1.0");
      return 0;
    case app::Mode::kDoctor:
      return app::runDoctor(options);
    case app::Mode::kStdio:
    case app::Mode::kHttp:
      break;
  }
  return app::runServer(options);
}
