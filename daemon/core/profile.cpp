#include "core/profile.hpp"

#include "core/text.hpp"

namespace p2pnode {

namespace {
std::string trimmed(std::string_view s) { return std::string(trim(s, std::string_view(" \t\n\0", 4))); }
}  // namespace

std::string drive_key(const NvmeDrive& d) {
  if (d.serial) { return "serial " + trimmed(*d.serial); }
  if (d.address) { return "address " + d.address->str(); }
  return "model " + trimmed(d.model.value_or("?"));
}

const char* to_string(Rung r) {
  switch (r) {
    case Rung::wait_idle: return "wait_idle";
    case Rung::reset_gpu: return "reset_gpu";
    case Rung::reload_module: return "reload_module";
    case Rung::reboot: break;
  }
  return "reboot";
}

std::optional<Rung> rung_from(std::string_view word) {
  for (Rung r : {Rung::wait_idle, Rung::reset_gpu, Rung::reload_module, Rung::reboot}) {
    if (word == to_string(r)) { return r; }
  }
  return std::nullopt;
}

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
