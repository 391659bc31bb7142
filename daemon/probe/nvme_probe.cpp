#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/json_text.hpp"
#include "lifecycle/reload.hpp"
#include "nvme/signature.hpp"
#include "pci/config_space.hpp"
#include "probe/nvme.hpp"

namespace p2pnode::probe {
namespace {

using sys::join;

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

std::string last_component(const std::string& s) {
  const auto slash = s.find_last_of('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

// nvme1n1 (a namespace) or nvme0c0n1 (a multipath path node); not nvme1 or nvme-subsys0.
bool is_namespace_name(const std::string& n) {
  if (!starts_with(n, "nvme") || n.size() < 7) { return false; }
  std::size_t i = 4;
  while (i < n.size() && std::isdigit(static_cast<unsigned char>(n[i]))) { ++i; }
  if (i == 4 || i >= n.size()) { return false; }
  if (n[i] == 'c') {
    ++i;
    while (i < n.size() && std::isdigit(static_cast<unsigned char>(n[i]))) { ++i; }
  }
  return i < n.size() && n[i] == 'n' && i + 1 < n.size() && std::isdigit(static_cast<unsigned char>(n[i + 1]));
}

struct MountTable {
  std::vector<std::pair<std::string, std::string>> by_devnum;  // "259:2" -> mountpoint
  std::vector<std::pair<std::string, std::string>> by_source;  // "/dev/nvme0n1p2" -> mountpoint
  std::set<std::string> swaps;                                 // "/dev/nvme0n1p3"
  std::vector<lifecycle::Holder> open;                         // processes with /dev/nvme* open
};

MountTable read_mount_table(const sys::SysRoot& root) {
  MountTable t;
  t.open = lifecycle::find_holders(root, "/dev/nvme");
  if (auto text = root.read_text("/proc/self/mountinfo")) {
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string id, parent, devnum, subdir, mnt;
      if (f >> id >> parent >> devnum >> subdir >> mnt) { t.by_devnum.emplace_back(devnum, mnt); }
    }
  }
  if (auto text = root.read_text("/proc/mounts")) {
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string src, mnt;
      if (f >> src >> mnt) { t.by_source.emplace_back(src, mnt); }
    }
  }
  if (auto text = root.read_text("/proc/swaps")) {
    std::istringstream in(*text);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string name;
      if (f >> name) { t.swaps.insert(name); }
    }
  }
  return t;
}

nvme::BlockDeviceUse probe_block_device(const sys::SysRoot& root, const std::string& dir, const std::string& name,
                                        bool hidden, const MountTable& mt) {
  nvme::BlockDeviceUse b;
  b.name = name;
  b.hidden = hidden || root.read_attr(join(dir, "hidden")).value_or("0") == "1";
  const std::string devnum = root.read_attr(join(dir, "dev")).value_or("");
  std::set<std::string> mounts;
  for (const auto& [dn, mnt] : mt.by_devnum) {
    if (!devnum.empty() && dn == devnum) { mounts.insert(mnt); }
  }
  for (const auto& [src, mnt] : mt.by_source) {
    if (src == "/dev/" + name) { mounts.insert(mnt); }
  }
  b.mountpoints.assign(mounts.begin(), mounts.end());
  b.holders = root.list_dir(join(dir, "holders"));
  b.swap = mt.swaps.count("/dev/" + name) > 0;
  for (const auto& h : mt.open) {
    if (std::find(h.files.begin(), h.files.end(), "/dev/" + name) != h.files.end()) {
      b.open_by.push_back(std::to_string(h.pid) + " (" + h.comm + ")");
    }
  }
  if (!b.hidden) {
    auto head = root.read_bytes("/dev/" + name, nvme::kSignatureBytes);
    if (head) {
      b.signature = nvme::decode_block_signature(*head);
    } else {
      b.unreadable = head.error().message;
    }
  }
  return b;
}

void add_namespace(const sys::SysRoot& root, const std::string& dir, const std::string& name, bool hidden,
                   const MountTable& mt, std::set<std::string>& seen, nvme::ControllerUse& use) {
  if (!seen.insert(name).second) { return; }
  use.block_devices.push_back(probe_block_device(root, dir, name, hidden, mt));
  for (const auto& e : root.list_dir(dir)) {
    if (starts_with(e, name) && e != name && root.exists(join(dir, e, "partition")) && seen.insert(e).second) {
      use.block_devices.push_back(probe_block_device(root, join(dir, e), e, false, mt));
    }
  }
}

std::optional<std::string> attr(const sys::SysRoot& root, const std::string& path) {
  auto v = root.read_attr(path);
  if (!v) { return std::nullopt; }
  std::string t = nvme::trim(*v);
  if (t.empty()) { return std::nullopt; }
  return t;
}

}  // namespace

std::vector<std::string> list_nvme_functions(const sys::SysRoot& root) {
  std::vector<std::string> out;
  for (const auto& bdf : root.list_dir("/sys/bus/pci/devices")) {
    const std::string cls = root.read_attr(join("/sys/bus/pci/devices", bdf, "class")).value_or("");
    if (starts_with(cls, "0x0108")) { out.push_back(bdf); }
  }
  return out;
}

NvmeFunctionState probe_nvme_function(const sys::SysRoot& root, const std::string& bdf) {
  NvmeFunctionState s;
  s.bdf = bdf;
  s.dir = join("/sys/bus/pci/devices", bdf);
  s.present = root.exists(s.dir);
  if (!s.present) { return s; }
  if (auto drv = root.read_link(join(s.dir, "driver"))) { s.driver = last_component(*drv); }
  s.driver_override = root.read_attr(join(s.dir, "driver_override")).value_or("");
  if (s.driver_override == "(null)") { s.driver_override.clear(); }
  s.power_state = root.read_attr(join(s.dir, "power_state")).value_or("");
  s.power_control = root.read_attr(join(s.dir, "power/control")).value_or("");
  for (const auto& c : root.list_dir(join(s.dir, "nvme"))) {
    if (!starts_with(c, "nvme")) { continue; }
    s.controllers.push_back(c);
    if (!s.serial) { s.serial = attr(root, join(s.dir, "nvme", c, "serial")); }
    if (!s.model) { s.model = attr(root, join(s.dir, "nvme", c, "model")); }
  }
  if (auto cfg = root.read_bytes(join(s.dir, "config"), 256)) {
    s.config = std::move(cfg).value();
    s.pm_state = pci::decode_pm_state(s.config);
    s.command = pci::decode_command(s.config);
  }
  return s;
}

nvme::ControllerUse probe_nvme_usage(const sys::SysRoot& root, const std::string& bdf) {
  nvme::ControllerUse use;
  use.bdf = bdf;
  const MountTable mt = read_mount_table(root);
  const std::string dev = join("/sys/bus/pci/devices", bdf);
  std::set<std::string> seen, nqns;
  for (const auto& c : root.list_dir(join(dev, "nvme"))) {
    if (!starts_with(c, "nvme")) { continue; }
    use.controllers.push_back(c);
    const std::string cdir = join(dev, "nvme", c);
    if (auto nqn = attr(root, join(cdir, "subsysnqn"))) { nqns.insert(*nqn); }
    for (const auto& e : root.list_dir(cdir)) {
      if (is_namespace_name(e) && root.is_dir(join(cdir, e))) {
        add_namespace(root, join(cdir, e), e, e.find('c', 4) != std::string::npos, mt, seen, use);
      }
    }
  }
  // Native multipath: the namespace heads live under the subsystem, not under the controller.
  for (const auto& b : root.list_dir("/sys/block")) {
    if (!starts_with(b, "nvme") || seen.count(b)) { continue; }
    const auto where = root.resolve(join("/sys/block", b));
    if (!where || where->find("/nvme-subsystem/") == std::string::npos) { continue; }
    const auto nqn = attr(root, join("/sys/block", b, "device/subsysnqn"));
    if (nqn && nqns.count(*nqn)) { add_namespace(root, *where, b, false, mt, seen, use); }
  }
  return use;
}

std::vector<RememberedDrive> read_remembered_drives(const sys::SysRoot& root) {
  std::vector<RememberedDrive> out;
  auto text = root.read_text(kNvmeSerialsFile);
  if (!text) { return out; }
  const auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.contains("drives") || !j["drives"].is_array()) { return out; }
  for (const auto& d : j["drives"]) {
    if (!d.is_object()) { continue; }
    RememberedDrive r;
    r.serial = d.value("serial", "");
    r.model = d.value("model", "");
    r.address = d.value("address", "");
    if (!r.serial.empty() && !r.address.empty()) { out.push_back(r); }
  }
  return out;
}

std::string render_remembered_drives(const std::vector<RememberedDrive>& drives) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& d : drives) { list.push_back({{"serial", d.serial}, {"model", d.model}, {"address", d.address}}); }
  return json_text(nlohmann::json{{"schema_version", 1}, {"drives", list}}, 2) + "\n";
}

std::vector<nvme::ControllerIdentity> probe_nvme_identities(const sys::SysRoot& root) {
  const auto remembered = read_remembered_drives(root);
  std::vector<nvme::ControllerIdentity> out;
  for (const auto& bdf : list_nvme_functions(root)) {
    const auto s = probe_nvme_function(root, bdf);
    nvme::ControllerIdentity id{bdf, s.driver, s.serial, s.model, false};
    if (!id.serial) {
      for (const auto& r : remembered) {
        if (r.address == bdf) {
          id.serial = r.serial;
          if (!r.model.empty()) { id.model = r.model; }
          id.remembered = true;
        }
      }
    }
    out.push_back(id);
  }
  return out;
}

Result<std::vector<std::uint8_t>> read_bar0(const sys::SysRoot& root, const std::string& bdf, std::size_t bytes) {
  const std::string path = join("/sys/bus/pci/devices", bdf, "resource0");
  const auto host = root.host_path(path);
  int fd = ::open(host.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO in a recorded root never blocks
  if (fd < 0) { return Error{"cannot open " + path + ": " + std::strerror(errno), errno}; }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < static_cast<off_t>(bytes)) {
    ::close(fd);
    return Error{path + " is shorter than " + std::to_string(bytes) + " bytes (no memory BAR 0?)", 0};
  }
  const std::size_t len = (bytes + 4095) & ~std::size_t{4095};
  void* map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (map == MAP_FAILED) { return Error{"cannot map " + path + ": " + std::strerror(err), err}; }
  // MMIO wants naturally aligned 32-bit loads; byte copies may be split or merged.
  std::vector<std::uint8_t> out(bytes);
  const volatile std::uint32_t* regs = static_cast<const volatile std::uint32_t*>(map);
  for (std::size_t i = 0; i < bytes / 4; ++i) {
    const std::uint32_t v = regs[i];
    for (int k = 0; k < 4; ++k) { out[i * 4 + static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(v >> (8 * k)); }
  }
  ::munmap(map, len);
  return out;
}

}  // namespace p2pnode::probe
