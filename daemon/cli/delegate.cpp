#include "cli/delegate.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <system_error>

#include "cli/commands.hpp"

namespace p2pnode::cli {

std::vector<std::filesystem::path> serve_binary_candidates(const std::filesystem::path& self) {
  const auto dir = self.parent_path();
  return {dir / kServeBinary, dir.parent_path() / "libexec" / "p2pnode" / kServeBinary};
}

int exec_serve_binary(char** argv) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    std::cerr << "p2pnode " << argv[1] << ": cannot find this program's own path (/proc/self/exe: " << ec.message()
              << "), so not the " << kServeBinary << " beside it either\n";
    return kUsage;
  }
  std::string tried;
  for (const auto& candidate : serve_binary_candidates(self)) {
    ::execv(candidate.c_str(), argv);
    tried += "\n  " + candidate.string() + ": " + std::strerror(errno);
  }
  std::cerr << "p2pnode " << argv[1] << ": the daemon program " << kServeBinary << " is not installed; tried:" << tried
            << "\n(install it beside p2pnode or in <prefix>/libexec/p2pnode)\n";
  return kUsage;
}

}  // namespace p2pnode::cli
