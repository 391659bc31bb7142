// The recorded machines under tests/fixtures, probed as `p2pnode check --root` probes them.
#pragma once

#include <string>

#include "core/inventory.hpp"
#include "probe/probe.hpp"
#include "sys/sysroot.hpp"
#include "unit/source_files.hpp"

namespace p2pnode::test_files {

inline Inventory probe_fixture(const std::string& name) {
  return probe::probe_inventory(sys::SysRoot(kSrc / "tests/fixtures" / name));
}

// tests/fixtures/h200-4gpu (four H200s, two NVLink pairs), probed once.
inline const Inventory& h200() {
  static const Inventory inv = probe_fixture("h200-4gpu");
  return inv;
}

}  // namespace p2pnode::test_files
