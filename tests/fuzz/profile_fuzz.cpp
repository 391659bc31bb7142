// libFuzzer target: any bytes handed to the profile loader give a profile or diagnostics, never a
// crash, a hang or undefined behaviour. Built and run by tests/fuzz/test_fuzz_profile.sh.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "profile/loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = p2pnode::profile::load_profile_text(text, "fuzz.yaml");
  // Exactly one of the two outcomes, and every diagnostic formats.
  if (r.profile.has_value() == !r.diagnostics.empty()) { __builtin_trap(); }
  for (const auto& d : r.diagnostics.list()) { (void)d.format(); }
  return 0;
}
