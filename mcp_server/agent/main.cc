// sandbox-agent: PID 1 of every sandbox container. See PROTOCOL.md for what it speaks.
// Usage: sandbox-agent [--code-user UID:GID] [--output-dir DIR] [--egress-proxy PORT=SOCKET]
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>

#include "agent/agent.h"
#include "agent/credentials.h"
#include "agent/egress_forwarder.h"
#include "agent/output_spill.h"
#include "common/malloc_tuning.h"

namespace {

struct Options {
  std::string output_dir{agent::kSavedOutputDir};
  std::optional<agent::EgressProxySpec> egress_proxy;
};

// Returns false after printing why when the arguments are unusable.
bool applyArguments(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--output-dir") == 0 && i + 1 < argc && argv[i + 1][0] == '/') {
      options.output_dir = argv[++i];
    } else if (std::strcmp(argv[i], "--code-user") == 0 && i + 1 < argc) {
      const auto user = agent::parseCodeUser(argv[++i]);
      if (!user) {
        std::fprintf(stderr, "sandbox-agent: --code-user wants UID:GID (decimal), got '%s'\n",
                     argv[i]);
        return false;
      }
      agent::adoptCodeUser(*user);  // before anything else: no child may start as root
      agent::scrubInitialEnvironment();
    } else if (std::strcmp(argv[i], "--egress-proxy") == 0) {
      const char* value = i + 1 < argc ? argv[++i] : "";
      options.egress_proxy = agent::parseEgressProxy(value);
      if (!options.egress_proxy) {
        std::fprintf(stderr,
                     "sandbox-agent: --egress-proxy wants PORT=SOCKET_PATH (PORT 1-65535 in "
                     "decimal, SOCKET_PATH an absolute Unix socket path under 108 bytes, e.g. "
                     "3128=/run/mcp/egress.sock), got '%s'\n",
                     value);
        return false;
      }
    } else {
      std::fprintf(stderr,
                   "sandbox-agent: unknown argument '%s'; usage: %s [--code-user UID:GID] "
                   "[--output-dir /ABSOLUTE/DIR] [--egress-proxy PORT=/ABSOLUTE/SOCKET]\n",
                   argv[i], argv[0]);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  common::tuneMallocForLargeMessages();  // under gVisor a page fault costs even more
  try {
    Options options;
    if (!applyArguments(argc, argv, options)) return 2;
    agent::Agent agent(options.output_dir, options.egress_proxy);
    return agent.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandbox-agent: fatal: %s\n", e.what());
    return 1;
  }
}
