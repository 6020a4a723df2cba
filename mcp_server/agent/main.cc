// sandbox-agent: PID 1 of every sandbox container. See PROTOCOL.md for what it speaks.
// Usage: sandbox-agent [--code-user UID:GID] [--output-dir DIR]
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>

#include "agent/agent.h"
#include "agent/credentials.h"
#include "agent/output_spill.h"
#include "common/malloc_tuning.h"

namespace {

// Returns false after printing why when the arguments are unusable.
bool applyArguments(int argc, char** argv, std::string& output_dir) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--output-dir") == 0 && i + 1 < argc && argv[i + 1][0] == '/') {
      output_dir = argv[++i];
    } else if (std::strcmp(argv[i], "--code-user") == 0 && i + 1 < argc) {
      const auto user = agent::parseCodeUser(argv[++i]);
      if (!user) {
        std::fprintf(stderr, "sandbox-agent: --code-user wants UID:GID (decimal), got '%s'\n",
                     argv[i]);
        return false;
      }
      agent::adoptCodeUser(*user);  // before anything else: no child may start as root
      agent::scrubInitialEnvironment();
    } else {
      std::fprintf(stderr,
                   "sandbox-agent: unknown argument '%s'; usage: %s [--code-user UID:GID] "
                   "[--output-dir /ABSOLUTE/DIR]\n",
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
    std::string output_dir(agent::kSavedOutputDir);
    if (!applyArguments(argc, argv, output_dir)) return 2;
    agent::Agent agent(output_dir);
    return agent.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandbox-agent: fatal: %s\n", e.what());
    return 1;
  }
}
