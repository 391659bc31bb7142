#include <algorithm>

#include "dkms/kernel_compiler.hpp"
#include "dkms/status.hpp"
#include "lifecycle/boot.hpp"
#include "lifecycle/boot_guard.hpp"
#include "lifecycle/next_kernel.hpp"
#include "nvidia/breakage.hpp"
#include "probe/probe.hpp"

namespace p2pnode::probe {
namespace {

constexpr const char* kFailedDir = "/var/lib/p2pnode/dkms/failed";

bool is_ko(const std::string& f) {
  for (const char* ext : {".ko", ".ko.xz", ".ko.zst", ".ko.gz"}) {
    const std::string e(ext);
    if (f.size() > e.size() && f.compare(f.size() - e.size(), e.size(), e) == 0) { return true; }
  }
  return false;
}

std::vector<DkmsOnKernel> dkms_on(const sys::SysRoot& root, const std::string& k) {
  std::vector<DkmsOnKernel> out;
  for (const auto& pkg : root.list_dir("/var/lib/dkms")) {
    const std::string pdir = sys::join("/var/lib/dkms", pkg);
    if (!root.is_dir(pdir)) { continue; }
    for (const auto& ver : root.list_dir(pdir)) {
      if (ver.rfind("kernel-", 0) == 0 || ver == "source" || ver == "build") { continue; }
      const std::string kdir = sys::join(pdir, ver, k);
      if (!root.is_dir(kdir)) { continue; }
      DkmsOnKernel d{pkg, ver, false, false};
      std::vector<std::string> kos;
      for (const auto& arch : root.list_dir(kdir)) {
        for (const auto& f : root.list_dir(sys::join(kdir, arch, "module"))) {
          if (is_ko(f)) { kos.push_back(f); }
        }
      }
      d.built = !kos.empty();
      d.installed = d.built && std::all_of(kos.begin(), kos.end(), [&](const std::string& f) {
                      return root.exists(sys::join("/lib/modules", k, "updates/dkms", f));
                    });
      if (d.installed) {
        for (const auto& f : kos) { d.modules.push_back(sys::join("/lib/modules", k, "updates/dkms", f)); }
      }
      out.push_back(std::move(d));
    }
  }
  return out;
}

std::vector<FailedBuild> failed_on(const sys::SysRoot& root, const std::string& k) {
  std::vector<FailedBuild> out;
  for (const auto& pkg : root.list_dir(kFailedDir)) {
    for (const auto& ver : root.list_dir(sys::join(kFailedDir, pkg))) {
      const std::string log = sys::join(kFailedDir, pkg, ver, k, "make.log");
      auto text = root.read_text(log, 16 << 20);
      if (!text) { continue; }
      // The compiler's first error line itself (first_compiler_error() may add its "In function" line).
      std::string first = dkms::first_compiler_error(*text).value_or("");
      if (const auto e = first.find("error:"); e != std::string::npos) {
        const auto start = first.rfind('\n', e);
        first = first.substr(start == std::string::npos ? 0 : start + 1);
      }
      FailedBuild f{pkg, ver, log, first, {}};
      for (const auto& m : nvidia::match_make_log(nvidia::builtin_breakages(), *text, ver)) {
        f.breakages.push_back(m.describe());
      }
      out.push_back(std::move(f));
    }
  }
  return out;
}

// The table's header tests on one kernel's headers: the file under build/ (Debian's -amd64 package)
// and source/ (its -common package, where include/linux/ and the top Makefile are). An absent-file
// test counts only where include/linux/module.h is there (not a partial or stub header tree).
std::map<std::string, bool> header_tests_on(const sys::SysRoot& root, const std::string& k) {
  std::map<std::string, bool> out;
  for (const auto& b : nvidia::builtin_breakages()) {
    if (!b.headers) { continue; }
    std::vector<std::optional<std::string>> copies;
    bool whole = false;
    for (const char* side : {"build", "source"}) {
      const std::string path = sys::join("/lib/modules", k, side, b.headers->file);
      auto text = root.read_text(path, 8 << 20);
      copies.push_back(text ? std::optional<std::string>(std::move(*text)) : std::nullopt);
      // A removed header is judged only where the headers are whole enough to tell: module.h is there.
      whole = whole || root.exists(sys::join("/lib/modules", k, side, "include/linux/module.h"));
    }
    if (const auto v = nvidia::headers_affected(b, copies, whole)) { out[b.id] = *v; }
  }
  return out;
}

// The compiler the kernel's headers name, and whether it is installed (Kbuild runs it by that name).
void probe_compiler(const sys::SysRoot& root, InstalledKernel& ik) {
  for (const char* f : {"include/config/auto.conf", "include/generated/autoconf.h"}) {
    const auto text = root.read_text(sys::join("/lib/modules", ik.release, "build", f), 8 << 20);
    if (!text) { continue; }
    const auto c = dkms::decode_kernel_compiler(*text);
    if (!c) { continue; }
    ik.compiler_text = c->text;
    ik.compiler_command = c->command;
    ik.compiler_package = c->package;
    ik.compiler_present = false;
    for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"}) {
      if (root.exists(sys::join(dir, c->command))) { ik.compiler_present = true; }
    }
    return;
  }
}

bool is_nvidia_ko(const std::string& f) { return f.rfind("nvidia.ko", 0) == 0 && is_ko(f); }

// The nvidia.ko files DKMS did not install, and the one modprobe resolves (modules.dep: the first
// field of a line is the module's path relative to /lib/modules/<k>, the one depmod chose).
void probe_nvidia_files(const sys::SysRoot& root, InstalledKernel& ik) {
  const std::string base = sys::join("/lib/modules", ik.release);
  for (const char* dir : {"updates", "updates/dkms", "extra", "kernel/drivers/video"}) {
    for (const auto& f : root.list_dir(sys::join(base, dir))) {
      if (!is_nvidia_ko(f)) { continue; }
      const std::string path = sys::join(base, dir, f);
      const bool from_dkms = std::any_of(ik.dkms.begin(), ik.dkms.end(), [&](const DkmsOnKernel& d) {
        return std::find(d.modules.begin(), d.modules.end(), path) != d.modules.end();
      });
      if (!from_dkms) { ik.foreign_nvidia.push_back(path); }
    }
  }
  const auto dep = root.read_text(sys::join(base, "modules.dep"), 16 << 20);
  if (!dep) { return; }
  std::size_t pos = 0;
  while (pos < dep->size()) {
    const auto nl = dep->find('\n', pos);
    const std::string line = dep->substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? dep->size() : nl + 1;
    const std::string mod = line.substr(0, line.find(':'));
    const auto slash = mod.rfind('/');
    if (is_nvidia_ko(slash == std::string::npos ? mod : mod.substr(slash + 1))) {
      ik.modprobe_nvidia = !mod.empty() && mod[0] == '/' ? mod : sys::join(base, mod);
      return;
    }
  }
}

}  // namespace

KernelsState probe_kernels(const sys::SysRoot& root, const std::string& running) {
  KernelsState s;
  const auto boot = lifecycle::next_boot_kernel(root);
  s.next_boot = boot.kernel;
  s.next_boot_how = boot.how;
  s.boot_guard_held = root.exists(lifecycle::kBootGuardDropIn);
  for (const auto& k : lifecycle::installed_kernels(root)) {
    InstalledKernel ik;
    ik.release = k;
    ik.headers = root.is_dir(sys::join("/lib/modules", k, "build"));
    ik.running = k == running;
    ik.next_boot = k == s.next_boot;
    ik.dkms = dkms_on(root, k);
    ik.failed = failed_on(root, k);
    if (ik.headers) { ik.header_tests = header_tests_on(root, k); }
    if (ik.headers) { probe_compiler(root, ik); }
    probe_nvidia_files(root, ik);
    s.kernels.push_back(std::move(ik));
  }
  // The judged apt candidate, when p2pnode judged one (`p2pnode judge-kernel`, or the daemon).
  if (auto text = root.read_text(std::string(lifecycle::kNextKernelRecord))) {
    try {
      if (auto v = lifecycle::verdict_from_json(nlohmann::json::parse(*text))) {
        s.next_candidate = NextKernelJudged{v->release,     v->package_version, v->module,    v->keeps_p2p, v->summary,
                                            v->first_error, v->make_log,        v->breakages, v->fixes};
      }
    } catch (const std::exception&) {  // a garbled record is as good as none: the next judgement rewrites it
    }
  }
  return s;
}

}  // namespace p2pnode::probe
