#include "profile/loader.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "core/driver_version.hpp"
#include "core/grammar.hpp"
#include "nvidia/breakage.hpp"
#include "profile/artifact_reader.hpp"
#include "profile/driver_reader.hpp"
#include "profile/input_rules.hpp"
#include "profile/remediation_reader.hpp"

namespace p2pnode::profile {
namespace {

constexpr std::size_t kMaxProfileBytes = 1 << 20;

void read_match(MapReader& root, Profile& p) {
  auto m = root.map("match", {"gpus", "hostname", "dmi"});
  if (!m) { return; }
  if (auto g = m->map("gpus", {"vendor", "devices", "count"})) {
    GpuMatch gm;
    if (auto v = g->string("vendor")) {
      gm.vendor = parse_pci_id(*v);
      if (!gm.vendor) {
        g->diag().add(g->get("vendor"), g->child_path("vendor"),
                      "expected a PCI vendor id such as 0x10de, found '" + *v + "'");
      }
    }
    const auto devs = g->string_list("devices");
    for (std::size_t i = 0; i < devs.size(); ++i) {
      if (auto id = parse_pci_id(devs[i])) {
        gm.devices.push_back(*id);
      } else {
        g->diag().add(g->get("devices")[i], g->child_path("devices") + "[" + std::to_string(i) + "]",
                      "expected a PCI device id such as 0x2684, found '" + devs[i] + "'");
      }
    }
    // 0: a box without GPUs (an NVMe-only node); the GPU check then expects none.
    if (auto c = g->integer("count", 0, 64)) { gm.count = static_cast<int>(*c); }
    p.match.gpus = gm;
  }
  p.match.hostname = m->string("hostname");
  if (auto d = m->map("dmi", {"sys_vendor", "product_name", "board_vendor", "board_name", "bios_version"})) {
    for (const auto& kv : d->node()) {
      const std::string k = kv.first.Scalar();
      if (auto v = d->string(k)) { p.match.dmi[k] = *v; }
    }
  }
}

void read_platform(MapReader& root, Profile& p) {
  auto m = root.map("platform", {"resizable_bar", "iommu", "acs", "pcie", "gpu_vram", "topology", "fixes"});
  if (!m) { return; }
  PlatformSpec& s = p.platform;
  if (auto v = m->choice("resizable_bar", {"required", "optional"})) {
    s.resizable_bar = *v == "required" ? RebarPolicy::required : RebarPolicy::optional;
  }
  if (auto v = m->choice("iommu", {"off", "passthrough", "off_or_passthrough", "any"})) {
    s.iommu = *v == "off"           ? IommuPolicy::off
              : *v == "passthrough" ? IommuPolicy::passthrough
              : *v == "any"         ? IommuPolicy::any
                                    : IommuPolicy::off_or_passthrough;
  }
  if (auto v = m->choice("acs", {"disabled", "any"})) {
    s.acs = *v == "disabled" ? AcsPolicy::disabled : AcsPolicy::any;
  }
  if (auto pcie = m->map("pcie", {"min_link_gen", "min_link_width"})) {
    static constexpr double kGen[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
    if (auto g = pcie->integer("min_link_gen", 1, 6)) { s.min_link_gts = kGen[*g]; }
    if (auto w = pcie->integer("min_link_width", 1, 32)) {
      if ((*w & (*w - 1)) != 0) {
        pcie->diag().add(pcie->get("min_link_width"), pcie->child_path("min_link_width"),
                         "expected a PCIe link width (1, 2, 4, 8, 16 or 32), found " + std::to_string(*w));
      } else {
        s.min_link_width = static_cast<int>(*w);
      }
    }
  }
  if (auto v = m->size("gpu_vram")) {
    if (*v == 0) {
      m->diag().add(m->get("gpu_vram"), m->child_path("gpu_vram"), "expected a size above zero");
    } else {
      s.gpu_vram = *v;
    }
  }
  if (auto v = m->choice("topology", {"any", "same_switch", "same_root_complex"})) {
    s.topology = *v == "same_switch"         ? TopologyPolicy::same_switch
                 : *v == "same_root_complex" ? TopologyPolicy::same_root_complex
                                             : TopologyPolicy::any;
  }
  if (auto f = m->map("fixes", {"acs", "rebar", "kernel_cmdline"})) {
    s.fix_acs = f->boolean("acs").value_or(false);
    s.fix_rebar = f->boolean("rebar").value_or(false);
    if (auto k = f->choice("kernel_cmdline", {"iommu=pt", "iommu=off", "amd_iommu=off", "intel_iommu=off"})) {
      s.fix_kernel_cmdline = *k;
    }
  }
}

// A user or group name as useradd accepts it, or a numeric id below (uid_t)-1 (which chown reads as
// "leave unchanged").
bool is_account_name(const std::string& s) {
  if (s.empty() || s.size() > 32) { return false; }
  if (s.find_first_not_of("0123456789") == std::string::npos) {
    return s.size() <= 10 && std::stoull(s) < 4294967295ULL;
  }
  return (std::islower(static_cast<unsigned char>(s[0])) || s[0] == '_') &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos;
}

// 2.6, 2.4.1: digits separated by single dots.
bool is_release(const std::string& v) {
  if (v.empty() || v.front() == '.' || v.back() == '.' || v.find("..") != std::string::npos) { return false; }
  return v.find_first_not_of("0123456789.") == std::string::npos;
}

void read_gdrcopy(MapReader& root, Profile& p) {
  auto m = root.map("gdrcopy", {"version", "source", "device", "pin"});
  if (!m) { return; }
  GdrcopySpec g;
  if (auto v = m->string("version", true)) {
    if (!is_release(*v)) {
      m->diag().add(m->get("version"), m->child_path("version"),
                    "expected gdrcopy's release such as 2.6, found '" + *v + "'");
    }
    g.version = *v;
  }
  m->require("source");
  if (auto a = read_artifact(*m, "source", "gdrcopy's source")) { g.source = *a; }
  if (auto d = m->map("device", {"owner", "group", "mode"})) {
    for (auto [field, out] :
         {std::pair<const char*, std::string*>{"owner", &g.device_owner}, {"group", &g.device_group}}) {
      if (auto v = d->string(field)) {
        if (!is_account_name(*v)) {
          d->diag().add(d->get(field), d->child_path(field),
                        std::string("expected a ") + (field[0] == 'o' ? "user" : "group") +
                            " name or numeric id, found '" + *v + "'");
        }
        *out = *v;
      }
    }
    if (auto mode = d->string("mode")) {
      const bool ok = mode->size() >= 3 && mode->size() <= 4 &&
                      mode->find_first_not_of("01234567") == std::string::npos &&
                      (mode->size() == 3 || mode->front() == '0');
      if (!ok) {
        d->diag().add(d->get("mode"), d->child_path("mode"),
                      "expected an octal file mode such as \"0660\", found '" + *mode + "'");
      } else if (d->get("mode").Tag() == "?") {  // a plain scalar: YAML tools read 0660 as the number 432
        d->diag().add(d->get("mode"), d->child_path("mode"),
                      "expected the mode quoted, \"" + *mode + "\": other YAML tools read " + *mode + " as a number");
      } else {
        g.device_mode = static_cast<unsigned>(std::stoul(*mode, nullptr, 8));
      }
    }
  }
  if (auto pin = m->size("pin")) {
    if (*pin == 0) { m->diag().add(m->get("pin"), m->child_path("pin"), "expected a size above 0 such as 64MiB"); }
    g.pin = *pin;
  }
  if (!p.driver || !p.driver->kernel_module) {
    m->diag().add(m->node(), m->path(),
                  "gdrdrv is built against the NVIDIA module's source: expected driver.kernel_module "
                  "in this profile as well");
  }
  p.gdrcopy = g;
}

// A PCI address field, parsed once into the lower-case form sysfs lists (nullopt with a diagnostic).
std::optional<PciAddress> read_pci_address(MapReader& d, std::string_view key, const std::string& what) {
  const auto text = d.string(key);
  if (!text) { return std::nullopt; }
  if (auto a = PciAddress::parse(*text)) { return a; }
  d.diag().add(d.get(key), d.child_path(key), "expected " + what + ", found '" + printable(*text) + "'");
  return std::nullopt;
}

void read_nvme(MapReader& root, Profile& p) {
  auto m = root.map("nvme", {"noiommu", "drives"});
  if (!m) { return; }
  NvmeSpec spec;
  spec.noiommu = m->boolean("noiommu").value_or(false);
  const auto drives = m->sequence("drives");
  std::map<std::string, std::string> seen;
  for (std::size_t i = 0; i < drives.size(); ++i) {
    const std::string path = m->child_path("drives") + "[" + std::to_string(i) + "]";
    MapReader d(drives[i], path, m->diag(),
                {"serial", "model", "address", "driver", "power_fixups", "wipe_ok", "pair_gpu"});
    if (!d.valid()) { continue; }
    NvmeDrive drive;
    drive.serial = d.string("serial");
    drive.model = d.string("model");
    drive.address = read_pci_address(d, "address", "a PCI address such as 0000:0b:00.0");
    if (!drive.serial && !drive.model && !d.has("address")) {
      d.diag().add(drives[i], path, "a drive needs serial (preferred), model or address to select it");
    }
    if (auto drv = d.choice("driver", {"vfio-pci", "nvme"})) { drive.driver = *drv; }
    drive.power_fixups = d.boolean("power_fixups").value_or(true);
    drive.wipe_ok = d.boolean("wipe_ok").value_or(false);
    drive.pair_gpu = read_pci_address(d, "pair_gpu", "the GPU's PCI address such as 0000:01:00.0");
    const std::string key = drive_key(drive);
    if (!seen.emplace(key, path).second) {
      d.diag().add(drives[i], path, "the drive with " + key + " is already listed at " + seen[key]);
    }
    spec.drives.push_back(drive);
  }
  if (spec.drives.empty() && drives.empty()) {
    m->diag().add(m->node(), m->child_path("drives"), "expected a list of at least one drive");
  }
  p.nvme = spec;
}

// 0.85 or 85%, above 0 and below 1.
std::optional<double> fraction(MapReader& m, std::string_view key) {
  auto s = m.string(key);
  if (!s) { return std::nullopt; }
  std::string t = *s;
  const bool pct = !t.empty() && t.back() == '%';
  if (pct) { t.pop_back(); }
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (pct) { v /= 100; }
  if (t.empty() || end != t.c_str() + t.size() || !(v > 0 && v < 1)) {
    m.diag().add(m.get(key), m.child_path(key),
                 "expected a fraction above 0 and below 1 (0.85 or 85%), found '" + *s + "'");
    return std::nullopt;
  }
  return v;
}

void read_selftest(MapReader& root, Profile& p) {
  auto m = root.map("selftest", {"when", "retry_busy", "scheduler", "ignore_processes", "schedule", "time_limit",
                                 "cases", "thresholds", "baseline_runs"});
  if (!m) { return; }
  SelftestSpec s;
  if (auto w = m->choice("when", {"idle", "always", "never"})) {
    s.when = *w == "always" ? SelftestWhen::always : *w == "never" ? SelftestWhen::never : SelftestWhen::idle;
  }
  if (auto v = m->duration("retry_busy")) {
    if (*v < std::chrono::minutes(1)) {
      m->diag().add(m->get("retry_busy"), m->child_path("retry_busy"), "expected at least 1m");
    } else {
      s.retry_busy = *v;
    }
  }
  s.ignore_processes = m->string_list("ignore_processes");
  if (auto sc = m->map("scheduler", {"command", "busy_file", "timeout"})) {
    SchedulerSpec spec;
    spec.command = sc->string_list("command");
    spec.busy_file = sc->string("busy_file");
    // A flag a prolog writes and its epilog removes: under /run (tmpfs, empty at boot), never a file
    // of the system's (the daemon is root; it only tests presence, but a path is also shown).
    if (spec.busy_file && (!grammar::is_safe_absolute_path(*spec.busy_file) || spec.busy_file->rfind("/run/", 0) != 0 ||
                           spec.busy_file->size() <= 5)) {
      sc->diag().add(sc->get("busy_file"), sc->child_path("busy_file"),
                     "expected a file under /run/ (a flag a scheduler's prolog writes and its epilog removes), of " +
                         std::string(kSafePathRule) + ", found '" + printable(*spec.busy_file) + "'");
    }
    if (!spec.command.empty() && (spec.command.front().empty() || spec.command.front().front() != '/')) {
      sc->diag().add(sc->get("command"), sc->child_path("command"),
                     "expected the program's absolute path first (it runs without a shell or PATH), found '" +
                         spec.command.front() + "'");
    }
    if (spec.command.empty() && !spec.busy_file) {
      sc->diag().add(sc->node(), sc->path(),
                     "expected command (argv; exit 0 idle, 1 busy) or busy_file (present: busy)");
    }
    if (auto v = sc->duration("timeout")) {
      if (v->count() <= 0) {
        sc->diag().add(sc->get("timeout"), sc->child_path("timeout"), "expected a duration above zero");
      } else {
        spec.timeout = *v;
      }
    }
    s.scheduler = spec;
  }
  if (auto v = m->duration("schedule")) {
    if (*v < std::chrono::minutes(1)) {
      m->diag().add(m->get("schedule"), m->child_path("schedule"), "expected at least 1m between self-tests");
    } else {
      s.schedule = *v;
    }
  }
  if (auto v = m->duration("time_limit")) {
    if (v->count() <= 0) {
      m->diag().add(m->get("time_limit"), m->child_path("time_limit"), "expected a duration above zero");
    } else {
      s.time_limit = *v;
    }
  }
  s.cases = m->string_list("cases");
  if (auto v = m->integer("baseline_runs", 1, 100)) { s.baseline_runs = static_cast<int>(*v); }
  if (auto t = m->map("thresholds", {"min_bandwidth", "max_latency", "max_integrity_errors", "min_fraction_of_expected",
                                     "max_drop_from_baseline"})) {
    if (auto v = fraction(*t, "min_fraction_of_expected")) { s.min_fraction_of_expected = *v; }
    if (auto v = fraction(*t, "max_drop_from_baseline")) { s.max_drop_from_baseline = *v; }
    if (auto bw = t->map("min_bandwidth", {"PIX", "PXB", "PHB", "NODE", "SYS", "NV", "any", "BAR"})) {
      for (const auto& kv : bw->node()) {
        if (auto v = bw->bandwidth(kv.first.Scalar())) { s.min_bandwidth[kv.first.Scalar()] = *v; }
      }
    }
    s.max_latency = t->duration("max_latency");
    if (auto v = t->integer("max_integrity_errors", 0, 1LL << 40)) {
      s.max_integrity_errors = static_cast<std::uint64_t>(*v);
    }
  }
  p.selftest = s;
}

}  // namespace

LoadResult load_profile_text(std::string_view text, const std::string& file_name) {
  LoadResult out{std::nullopt, Diagnostics(file_name)};
  auto doc = parse_yaml_text(text, out.diagnostics, kMaxProfileBytes);
  if (!doc) { return out; }
  if (doc->IsNull()) {
    out.diagnostics.add(0, 0, "",
                        "the file has only comments or blank lines; expected a YAML mapping with "
                        "apiVersion, kind and metadata");
    return out;
  }
  if (!doc->IsMap()) {
    out.diagnostics.add(
        *doc, "",
        "expected a YAML mapping with apiVersion, kind and metadata at the top, found " + describe_node(*doc));
    return out;
  }
  // A control character in any string could end a line of a file p2pnode writes: refused first.
  check_no_control_chars(*doc, out.diagnostics);
  if (!out.diagnostics.empty()) { return out; }
  MapReader root(
      *doc, "", out.diagnostics,
      {"apiVersion", "kind", "metadata", "match", "platform", "driver", "gdrcopy", "nvme", "selftest", "remediation"});
  if (!root.valid()) { return out; }
  Profile p;
  p.source_file = file_name;
  if (auto v = root.string("apiVersion", true); v && *v != "p2pnode/v1") {
    out.diagnostics.add(root.get("apiVersion"), "apiVersion", "expected 'p2pnode/v1', found '" + *v + "'");
  }
  if (auto v = root.string("kind", true); v && *v != "NodeProfile") {
    out.diagnostics.add(root.get("kind"), "kind", "expected 'NodeProfile', found '" + *v + "'");
  }
  root.require("metadata");
  if (auto md = root.map("metadata", {"name", "description"})) {
    if (auto n = md->string("name", true)) {
      const bool ok = n->size() <= 63 &&
                      n->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") == std::string::npos &&
                      std::isalnum(static_cast<unsigned char>(n->front()));
      if (!ok) {
        out.diagnostics.add(md->get("name"), "metadata.name",
                            "expected a lowercase letter or digit, then lowercase letters, digits, '-', '_' or '.', "
                            "at most 63, found '" +
                                printable(*n) + "'");
      }
      p.name = *n;
    }
    p.description = md->string("description").value_or("");
  }
  read_match(root, p);
  read_platform(root, p);
  read_driver(root, p);
  read_gdrcopy(root, p);
  read_nvme(root, p);
  read_selftest(root, p);
  read_remediation(root, p);
  if (out.diagnostics.empty()) { out.profile = std::move(p); }
  return out;
}

LoadResult load_profile_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    LoadResult r{std::nullopt, Diagnostics(file.string())};
    r.diagnostics.add(0, 0, "", std::filesystem::exists(file, ec) ? "not a regular file" : "no such file");
    return r;
  }
  const auto size = std::filesystem::file_size(file, ec);
  if (!ec && size > kMaxProfileBytes) {
    LoadResult r{std::nullopt, Diagnostics(file.string())};
    r.diagnostics.add(0, 0, "",
                      "the file is " + std::to_string(size) + " bytes; a profile is at most " +
                          std::to_string(kMaxProfileBytes) + " bytes");
    return r;
  }
  std::ifstream in(file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) {
    LoadResult r{std::nullopt, Diagnostics(file.string())};
    r.diagnostics.add(0, 0, "", "cannot read the file");
    return r;
  }
  return load_profile_text(ss.str(), file.string());
}

DirLoadResult load_profiles_dir(const std::filesystem::path& dir) {
  DirLoadResult out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    out.error = "profiles directory " + dir.string() + " does not exist or is not a directory";
    return out;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const auto ext = e.path().extension();
    if (ext == ".yaml" || ext == ".yml") { files.push_back(e.path()); }
  }
  std::sort(files.begin(), files.end());
  std::map<std::string, std::string> names;
  for (const auto& f : files) {
    auto r = load_profile_file(f);
    if (!r.profile) {
      out.failures.push_back(std::move(r.diagnostics));
      continue;
    }
    if (auto [it, fresh] = names.emplace(r.profile->name, f.string()); !fresh) {
      Diagnostics d(f.string());
      d.add(0, 0, "metadata.name", "profile name '" + r.profile->name + "' is already used by " + it->second);
      out.failures.push_back(std::move(d));
      continue;
    }
    out.profiles.push_back(std::move(*r.profile));
  }
  return out;
}

}  // namespace p2pnode::profile
