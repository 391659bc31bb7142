// Whether the modules DKMS installed are signed, asked of kmod's modinfo (it reads compressed
// modules too: Debian 13 installs nvidia.ko.xz). Only where Secure Boot enforces signatures: there a
// kernel whose module is unsigned is, for loading, a kernel without the module.
#include "probe/probe.hpp"
#include "secureboot/verdict.hpp"

namespace p2pnode::probe {

void probe_module_signatures_by_commands(const sys::SysRoot& root, sys::CommandRunner& runner, Inventory& inv) {
  if (secureboot::decide_signing(inv.secure_boot).trust == secureboot::Trust::not_enforced) { return; }
  for (auto& k : inv.kernels.kernels) {
    for (auto& d : k.dkms) {
      if (!d.installed || d.modules.empty()) { continue; }
      bool all_signed = true, read = true;
      for (const auto& m : d.modules) {
        sys::Command c;
        c.argv = {"modinfo", "-F", "signer", root.host_path(m).string()};
        c.timeout = std::chrono::seconds(30);
        const auto r = runner.run(c);
        if (!r.success()) {
          read = false;  // unknown: neither signed nor unsigned
          break;
        }
        std::string signer = r.out;
        while (!signer.empty() && (signer.back() == '\n' || signer.back() == ' ')) { signer.pop_back(); }
        if (signer.empty()) {
          all_signed = false;
        } else if (d.signer.empty()) {
          d.signer = signer;
        }
      }
      if (read) { d.signed_modules = all_signed; }
    }
  }
}

}  // namespace p2pnode::probe
