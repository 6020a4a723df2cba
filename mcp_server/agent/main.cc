// sandbox-agent: PID 1 of every sandbox container. See PROTOCOL.md for what it speaks.
#include <cstdio>
#include <exception>

#include "agent/agent.h"
#include "common/malloc_tuning.h"

int main() {
  common::tuneMallocForLargeMessages();  // under gVisor a page fault costs even more
  try {
    agent::Agent agent;
    return agent.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandbox-agent: fatal: %s\n", e.what());
    return 1;
  }
}
