// p2pnode-agent entry point.
#include "p2pnode/agent/health.hpp"

namespace p2pnode::agent {
int run_agent(int argc, char** argv);
}

int main(int argc, char** argv) {
  // --health reads NVML only: it must not touch the CUDA runtime (no context on a busy GPU).
  if (p2pnode::agent::wants_health(argc, argv)) {
    return p2pnode::agent::run_health(argc, argv, P2PNODE_AGENT_VERSION);
  }
  return p2pnode::agent::run_agent(argc, argv);
}
