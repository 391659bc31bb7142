#include "lifecycle/module_state.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "dkms/conf.hpp"
#include "lifecycle/dkms_run.hpp"
#include "lifecycle/ko_file.hpp"

namespace p2pnode::lifecycle {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::vector<std::string> kernels_with_headers(const sys::SysRoot& root) {
  std::vector<std::string> out;
  for (const auto& k : root.list_dir("/lib/modules")) {
    if (root.is_dir(sys::join("/lib/modules", k, "build"))) { out.push_back(k); }
  }
  return out;
}

std::string installed_module_path(const sys::SysRoot& root, const std::string& kernel, const std::string& module) {
  for (const char* ext : {".ko", ".ko.xz", ".ko.zst", ".ko.gz"}) {
    const std::string p = sys::join("/lib/modules", kernel, "updates/dkms", module + ext);
    if (root.exists(p)) { return p; }
  }
  return {};
}

std::optional<std::string> ko_srcversion(const sys::SysRoot& root, const std::string& ko) {
  const auto bytes = root.read_bytes(ko, 256 << 20);
  if (!bytes) { return std::nullopt; }
  const auto elf = module_elf(ko, *bytes);
  if (!elf) { return std::nullopt; }
  return modinfo_field(*elf, "srcversion");
}

std::vector<std::string> module_gaps(const sys::SysRoot& root, const DriverSpec& d) {
  std::vector<std::string> gaps;
  if (!d.kernel_module) { return gaps; }
  const ModuleTarget t = module_target(d);
  const auto kernels = kernels_with_headers(root);
  if (kernels.empty()) {
    gaps.push_back("no kernel in /lib/modules has headers (build/): install linux-headers for the running kernel");
    return gaps;
  }
  const auto stamp = read_stamp(root, t.stamp);
  if (!stamp) {
    gaps.push_back(t.name + "/" + t.version + " was not installed by p2pnode");
  } else if (stamp->identity != t.identity) {
    gaps.push_back("the profile's module source or patches changed since the last install");
  }
  const auto conf_path = sys::join(t.src_dir, "dkms.conf");
  if (!root.exists(conf_path)) {
    gaps.push_back(conf_path + " is missing");
  } else if (auto text = root.read_text(conf_path); text && dkms::without_autoinstall(*text)) {
    gaps.push_back(conf_path +
                   " has AUTOINSTALL: DKMS's own kernel hook would fail a kernel's installation when "
                   "the build fails (p2pnode's hook builds new kernels instead)");
  }
  for (const auto& k : kernels) {
    if (!module_in_place(root, t, stamp, k)) { gaps.push_back("not installed for kernel " + k); }
  }
  return gaps;
}

std::optional<Stamp> read_stamp(const sys::SysRoot& root, const std::string& path) {
  auto text = root.read_text(path);
  if (!text) { return std::nullopt; }
  try {
    const json j = json::parse(*text);
    return Stamp{j.at("identity").get<std::string>(), j.at("kernels").get<std::vector<std::string>>(),
                 j.at("modules").get<std::vector<std::string>>()};
  } catch (const std::exception&) { return std::nullopt; }
}

std::string build_inputs(const sys::SysRoot& root, const ModuleTarget& t, const std::string& kernel) {
  std::string out = "identity " + t.identity + "\n";
  for (const char* f :
       {".config", "Module.symvers", "include/generated/autoconf.h", "include/generated/utsrelease.h"}) {
    std::error_code ec;
    const auto p = root.host_path(sys::join("/lib/modules", kernel, "build", f));
    const auto size = fs::file_size(p, ec);
    if (ec) {
      out += std::string(f) + " missing\n";
      continue;
    }
    const auto mtime = fs::last_write_time(p, ec).time_since_epoch().count();
    out += std::string(f) + " " + std::to_string(size) + " " + std::to_string(mtime) + "\n";
  }
  return out;
}

std::string inputs_path_of(const ModuleTarget& t, const std::string& kernel) {
  const std::string kept = failed_log_path(t, kernel);
  return kept.substr(0, kept.rfind('/')) + "/inputs";
}

bool failed_with_these_inputs(const sys::SysRoot& root, const ModuleTarget& t, const std::string& kernel) {
  const auto prev = root.read_text(inputs_path_of(t, kernel));
  return prev && *prev == build_inputs(root, t, kernel);
}

std::string not_retried(const ModuleTarget& t, const std::string& kernel) {
  return "build for " + kernel +
         " not retried: it failed with the same source, patches and headers (make.log: " + failed_log_path(t, kernel) +
         "; `p2pnode check --only driver.kernels` names the error); new headers or a changed profile retry it, "
         "or remove " +
         inputs_path_of(t, kernel);
}

bool module_in_place(const sys::SysRoot& root, const ModuleTarget& t, const std::optional<Stamp>& stamp,
                     const std::string& kernel) {
  if (!stamp || !contains(stamp->kernels, kernel) ||
      !root.is_dir(sys::join("/var/lib/dkms", t.name, t.version, kernel))) {
    return false;
  }
  return std::all_of(stamp->modules.begin(), stamp->modules.end(),
                     [&](const std::string& m) { return !installed_module_path(root, kernel, m).empty(); });
}

}  // namespace p2pnode::lifecycle
