// Which box the stand-in NVML (tests/fake_nvml/nvml.cpp) is, for as long as this lives: the
// library reads P2PNODE_FAKE_NVML_BOX on every call, so one loaded copy serves a test binary's
// tests in turn, each with the box it names, and a test that names none fails at nvmlInit.
#pragma once

#include <stdlib.h>

namespace p2pnode::fake_nvml {
class UseBox {
 public:
  explicit UseBox(const char* name) { ::setenv("P2PNODE_FAKE_NVML_BOX", name, 1); }
  ~UseBox() { ::unsetenv("P2PNODE_FAKE_NVML_BOX"); }
  UseBox(const UseBox&) = delete;
  UseBox& operator=(const UseBox&) = delete;
};
}  // namespace p2pnode::fake_nvml
