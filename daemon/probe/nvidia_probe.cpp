#include <chrono>
#include <iterator>
#include <regex>

#include "lifecycle/artifact.hpp"
#include "nvidia/forecast.hpp"
#include "nvidia/gpu_memory.hpp"
#include "nvidia/peer_alignment.hpp"
#include "nvidia/userspace.hpp"
#include "nvidia/version.hpp"
#include "probe/probe.hpp"

namespace p2pnode::probe {
using sys::join;

void set_userspace(NvidiaDriverState& s, const nvidia::UserspaceDriver& u) {
  s.userspace_version = u.version;
  s.userspace_source = u.source;
  s.userspace_path = u.path;
}

void probe_userspace_by_commands(const sys::SysRoot& root, sys::CommandRunner& runner, NvidiaDriverState& s) {
  if (s.userspace_version) { return; }
  set_userspace(s, nvidia::find_userspace_driver_by_commands(root, runner, nvidia::UserspaceDriver{}));
}

void probe_gpu_memory_by_commands(sys::CommandRunner& runner, Inventory& inv) {
  if (!inv.gpu_memory.empty() || !inv.nvidia.loaded_version || inv.gpus().empty()) { return; }
  sys::Command c;
  c.argv.assign(std::begin(nvidia::kSmiMemoryArgv), std::end(nvidia::kSmiMemoryArgv));
  c.timeout = std::chrono::seconds(20);
  const auto r = runner.run(c);
  if (!r.success()) {
    inv.gpu_memory_source = "nvidia-smi " + r.describe();
    return;
  }
  auto mem = nvidia::parse_smi_memory(r.out);
  if (!mem) {
    inv.gpu_memory_source = mem.error().message;
    return;
  }
  inv.gpu_memory = std::move(*mem);
  inv.gpu_memory_source = "nvidia-smi";
}

NvidiaDriverState probe_nvidia_driver(const sys::SysRoot& root) {
  NvidiaDriverState s;
  if (auto v = root.read_attr("/sys/module/nvidia/version")) { s.loaded_version = *v; }
  if (auto text = root.read_text("/proc/driver/nvidia/version")) {
    if (auto parsed = nvidia::parse_proc_version(*text)) {
      s.proc_version_line = parsed->line;
      s.open_module = parsed->open;
      if (!parsed->builder.empty()) { s.builder = parsed->builder; }
      if (!s.loaded_version) { s.loaded_version = parsed->version; }
    }
  }
  for (const char* m : {"nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem"}) {
    if (root.is_dir(join("/sys/module", m))) { s.modules_loaded.emplace_back(m); }
  }
  for (const auto& v : root.list_dir("/lib/firmware/nvidia")) {
    if (nvidia::looks_like_version(v)) { s.gsp_firmware_versions.push_back(v); }
  }
  set_userspace(s, nvidia::find_userspace_driver(root));
  for (const auto& f : root.list_dir("/etc/modprobe.d")) {
    if (f.size() < 5 || f.substr(f.size() - 5) != ".conf") { continue; }
    if (auto text = root.read_text(join("/etc/modprobe.d", f))) {
      for (const auto& [k, v] : nvidia::parse_modprobe_options(*text, "nvidia")) { s.modprobe_options[k] = v; }
    }
  }
  // Module trees staged in /usr/src: does each still refuse an unaligned peer address (its source says)?
  for (const auto& dir : root.list_dir("/usr/src")) {
    const std::string tree = join("/usr/src", dir);
    if (auto text = root.read_text(join(tree, std::string(nvidia::kPeerAlignmentFile)), 8 << 20)) {
      s.peer_alignment[tree] = nvidia::demands_peer_alignment(*text);
    }
    if (root.is_dir(join(tree, "kernel-open"))) { s.source_tests[tree] = nvidia::read_source_tests(root, tree); }
  }
  return s;
}

void use_profile_tree(const sys::SysRoot& root, const Profile& p, Inventory& inv) {
  if (!p.driver || !p.driver->kernel_module) { return; }
  const Artifact& a = p.driver->kernel_module->artifact;
  std::string dir;
  if (a.path && root.is_dir(*a.path)) {
    dir = *a.path;
  } else if (a.git && root.is_dir(lifecycle::git_checkout_dir(a))) {
    dir = lifecycle::git_checkout_dir(a);
  }
  if (dir.empty() || !root.is_dir(join(dir, "kernel-open"))) { return; }
  if (!inv.nvidia.source_tests.count(dir)) { inv.nvidia.source_tests[dir] = nvidia::read_source_tests(root, dir); }
  inv.nvidia.profile_tree = dir;
}

}  // namespace p2pnode::probe
