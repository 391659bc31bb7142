#include "nvidia/userspace.hpp"

#include <filesystem>

#include "nvidia/ld_cache.hpp"
#include "nvidia/version.hpp"

namespace p2pnode::nvidia {
namespace {
constexpr std::string_view kPrefix = "libcuda.so.";

// "libcuda.so.550.90.07" -> "550.90.07"; nullopt for libcuda.so.1 and anything else.
std::optional<std::string> version_of(std::string_view file_name) {
  if (file_name.rfind(kPrefix, 0) != 0) { return std::nullopt; }
  const auto v = file_name.substr(kPrefix.size());
  if (!looks_like_version(v)) { return std::nullopt; }
  return std::string(v);
}

// The version behind a cache entry: its own name, or the file its soname link points to.
std::optional<UserspaceDriver> from_entry(const sys::SysRoot& root, const LdCacheEntry& e, const char* source) {
  if (!e.is_x86_64_libc6() || e.soname.rfind(kPrefix, 0) != 0) { return std::nullopt; }
  std::string path = e.path;
  for (int hops = 0; hops < 8; ++hops) {  // libcuda.so.1 -> libcuda.so.550.90.07, seldom more
    if (auto v = version_of(std::filesystem::path(path).filename().string())) {
      return UserspaceDriver{v, source, path, ""};
    }
    auto target = root.read_link(path);
    if (!target) { return std::nullopt; }
    path = (std::filesystem::path(path).parent_path() / *target).lexically_normal().string();
  }
  return std::nullopt;
}

std::optional<UserspaceDriver> from_entries(const sys::SysRoot& root, const std::vector<LdCacheEntry>& entries,
                                            const char* source) {
  // The loader asks for the soname libcuda.so.1; a bare libcuda.so (development link) only if not.
  for (const char* want : {"libcuda.so.1", ""}) {
    for (const auto& e : entries) {
      if (*want == '\0' || e.soname == want) {
        if (auto u = from_entry(root, e, source)) { return u; }
      }
    }
  }
  return std::nullopt;
}
}  // namespace

UserspaceDriver find_userspace_driver(const sys::SysRoot& root) {
  UserspaceDriver none;
  if (root.exists("/etc/ld.so.cache")) {
    auto bytes = root.read_bytes("/etc/ld.so.cache", 64 << 20);
    auto entries = bytes ? parse_ld_so_cache(*bytes) : Result<std::vector<LdCacheEntry>>(bytes.error());
    if (!entries) {
      none.note = "/etc/ld.so.cache not decoded: " + entries.error().message;
    } else if (auto u = from_entries(root, *entries, "ld.so.cache")) {
      return *u;
    }
  }
  for (const char* dir :
       {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu", "/lib64", "/lib"}) {
    for (const auto& f : root.list_dir(dir)) {
      if (auto v = version_of(f)) { return UserspaceDriver{v, "libdir", sys::join(dir, f), none.note}; }
    }
  }
  return none;
}

UserspaceDriver find_userspace_driver_by_commands(const sys::SysRoot& root, sys::CommandRunner& runner,
                                                  UserspaceDriver found) {
  if (found.version) { return found; }
  auto run = [&](std::vector<std::string> argv) {
    sys::Command c;
    c.argv = std::move(argv);
    c.timeout = std::chrono::seconds(10);
    c.max_output_bytes = 4 << 20;
    return runner.run(c);
  };
  const auto ldconfig = run({"ldconfig", "-p"});
  if (ldconfig.success()) {
    if (auto u = from_entries(root, parse_ldconfig_p(ldconfig.out), "ldconfig -p")) { return *u; }
  }
  const auto smi = run({"nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"});
  if (smi.success()) {
    const auto rep = parse_smi_driver_versions(smi.out);
    if (rep.problem.empty() && !rep.versions.empty()) {
      return UserspaceDriver{rep.versions.front(), "nvidia-smi", "", found.note};
    }
  }
  found.note += std::string(found.note.empty() ? "" : "; ") + "no libcuda.so.1 in `ldconfig -p` (" +
                ldconfig.describe() + "), nvidia-smi " + smi.describe();
  return found;
}

}  // namespace p2pnode::nvidia
