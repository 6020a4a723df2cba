// sandbox-agent: PID 1 of every sandbox container. See PROTOCOL.md for what it speaks.
#include <cstdio>
#include <exception>

#include "agent/agent.h"

int main() {
  try {
    agent::Agent agent;
    return agent.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sandbox-agent: fatal: %s\n", e.what());
    return 1;
  }
}
