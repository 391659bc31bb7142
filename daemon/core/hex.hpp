#pragma once
// PCI ids and register values as people read them in messages.
#include <cstdint>
#include <cstdio>
#include <string>

namespace p2pnode {

inline std::string hex4_bare(std::uint16_t v) {  // "10de"
  char b[8];
  std::snprintf(b, sizeof b, "%04x", v);
  return b;
}
inline std::string hex4(std::uint16_t v) { return "0x" + hex4_bare(v); }  // "0x10de"

}  // namespace p2pnode
