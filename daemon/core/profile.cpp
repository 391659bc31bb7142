#include "core/profile.hpp"

namespace p2pnode {

const char* to_string(SelftestWhen w) {
  switch (w) {
    case SelftestWhen::always: return "always";
    case SelftestWhen::never: return "never";
    case SelftestWhen::idle: break;
  }
  return "idle";
}

const char* to_string(IommuPolicy p) {
  switch (p) {
    case IommuPolicy::off: return "off";
    case IommuPolicy::passthrough: return "passthrough";
    case IommuPolicy::off_or_passthrough: return "off_or_passthrough";
    case IommuPolicy::any: break;
  }
  return "any";
}

const char* to_string(TopologyPolicy p) {
  switch (p) {
    case TopologyPolicy::same_switch: return "same_switch";
    case TopologyPolicy::same_root_complex: return "same_root_complex";
    case TopologyPolicy::any: break;
  }
  return "any";
}

}  // namespace p2pnode
