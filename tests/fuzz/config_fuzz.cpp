// libFuzzer target: any bytes as the daemon's configuration (/etc/p2pnode/p2pnode.yaml) give a
// configuration or diagnostics, never a crash, a hang or undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = p2pnode::engine::load_config_text(text, "fuzz.yaml");
  if (r.config.has_value() == !r.diagnostics.empty()) { __builtin_trap(); }
  for (const auto& d : r.diagnostics.list()) { (void)d.format(); }
  return 0;
}
