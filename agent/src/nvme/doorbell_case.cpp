#include "p2pnode/agent/nvme/doorbell_case.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/pci_address.hpp"  // the daemon's own parser: one rule for an address

namespace p2pnode::agent::nvme {
namespace fs = std::filesystem;

namespace {
std::string read_line(const fs::path& p) {
  std::ifstream f(p);
  std::string s;
  std::getline(f, s);
  return s;
}
}  // namespace

std::optional<DriveSpec> parse_drive_spec(std::string_view text, std::string& error) {
  DriveSpec d;
  std::string s(text);
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      error = "--nvme '" + s + "': '" + item + "' is not key=value (keys: bdf, serial, model, gpu)";
      return std::nullopt;
    }
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    if (k == "bdf") {
      d.bdf = v;
    } else if (k == "serial") {
      d.serial = v;
    } else if (k == "model") {
      d.model = v;
    } else if (k == "gpu") {
      d.pair_gpu = v;
    } else {
      error = "--nvme '" + s + "': unknown key '" + k + "' (keys: bdf, serial, model, gpu)";
      return std::nullopt;
    }
  }
  if (const auto a = p2pnode::PciAddress::parse(d.bdf)) {
    d.bdf = a->str();  // sysfs names devices in lower case
  } else {
    error = "--nvme '" + s + "': bdf must be a PCI address like 0000:0b:00.0, found '" + d.bdf + "'";
    return std::nullopt;
  }
  if (d.serial.empty()) {
    error = "--nvme '" + s + "': serial= is required (what sysfs recorded before the bind)";
    return std::nullopt;
  }
  if (!d.pair_gpu.empty()) {
    if (const auto a = p2pnode::PciAddress::parse(d.pair_gpu)) {
      d.pair_gpu = a->str();
    } else {
      error = "--nvme '" + s + "': gpu must be a PCI address like 0000:0a:00.0, found '" + d.pair_gpu + "'";
      return std::nullopt;
    }
  }
  return d;
}

const char* to_string(Writer w) { return w == Writer::host ? "host" : "gpu"; }

std::optional<std::vector<Writer>> parse_writers(std::string_view t) {
  if (t == "host") { return std::vector<Writer>{Writer::host}; }
  if (t == "gpu") { return std::vector<Writer>{Writer::gpu}; }
  if (t == "both") { return std::vector<Writer>{Writer::gpu, Writer::host}; }
  return std::nullopt;
}

Discovery discover_vfio_drives(const std::string& sysfs, const std::string& serials_json) {
  Discovery out;
  nlohmann::json remembered;
  {
    std::ifstream f(serials_json);
    if (f) { remembered = nlohmann::json::parse(f, nullptr, false); }
  }
  std::error_code ec;
  std::vector<std::string> bdfs;
  for (const auto& e : fs::directory_iterator(fs::path(sysfs) / "bus/pci/devices", ec)) {
    const std::string cls = read_line(e.path() / "class");
    if (cls.rfind("0x0108", 0) != 0) { continue; }
    const auto drv = fs::read_symlink(e.path() / "driver", ec);
    if (ec || drv.filename() != "vfio-pci") { continue; }
    bdfs.push_back(e.path().filename().string());
  }
  std::sort(bdfs.begin(), bdfs.end());
  for (const auto& bdf : bdfs) {
    DriveSpec d;
    d.bdf = bdf;
    if (remembered.is_object() && remembered.contains("drives") && remembered["drives"].is_array()) {
      for (const auto& r : remembered["drives"]) {
        if (r.is_object() && r.value("address", "") == bdf) {
          d.serial = r.value("serial", "");
          d.model = r.value("model", "");
        }
      }
    }
    if (d.serial.empty()) {
      out.unknown.push_back(bdf + " is on vfio-pci but " + serials_json +
                            " has no serial for it (p2pnode records it when it binds the drive): not tested");
    } else {
      out.drives.push_back(d);
    }
  }
  return out;
}

Cell run_doorbell_cell(const DriveSpec& d, Writer writer, const WriterFactory& make_writer, const CaseEnv& env) {
  Cell c;
  c.extra["nvme"] = d.bdf;
  c.extra["writer"] = to_string(writer);
  c.extra["expected_serial"] = d.serial;
  if (!d.model.empty()) { c.extra["expected_model"] = d.model; }
  if (!d.pair_gpu.empty()) { c.extra["pair_gpu"] = d.pair_gpu; }
  const VfioTarget t = inspect_vfio_target(env.sysfs, env.dev, d.bdf);
  std::string err;
  bool busy = false;
  auto dev = VfioNvme::open(t, AdminLayout{}.total_bytes, err, busy);
  if (!dev) {
    c.status = (!t.not_usable.empty() || busy) ? Status::waived : Status::failed;
    c.reason = err;
    return c;
  }
  c.extra["iommu"] = dev->iommu_mode();
  c.extra["bar0_mapped"] = dev->bar0() != nullptr;
  std::string why;
  auto w = make_writer(*dev, d, why);
  if (!w) {
    c.status = Status::failed;
    c.reason = std::string(to_string(writer)) + " writer: " + why;
    c.extra["vfio_log"] = dev->log();
    return c;
  }
  const auto o = run_identify_doorbell(*dev, dev->dma(), *w, {d.serial, d.model}, env.timing);
  w.reset();  // the GPU writer unregisters BAR0 before VFIO unmaps it
  c.extra["vfio_log"] = dev->log();
  c.extra["doorbell"] = to_json(o);
  if (o.identify) { c.extra["identify"] = {{"serial", o.identify->serial}, {"model", o.identify->model}}; }
  if (o.completion_us) { c.numbers.emplace_back("completion_us", *o.completion_us); }
  if (o.ready_ms) { c.numbers.emplace_back("ready_ms", *o.ready_ms); }
  c.status = o.passed ? Status::passed : Status::failed;
  if (!o.passed) { c.reason = o.step + ": " + o.reason; }
  return c;
}

CaseResult run_doorbell_case(const std::vector<DriveSpec>& named, const std::vector<Writer>& writers,
                             const std::function<WriterFactory(Writer)>& factory_for, const CaseEnv& env) {
  CaseResult cr;
  cr.key = kCaseKey;
  cr.description = kCaseDescription;
  cr.shape = CellShape::nvme;
  cr.matrix_keys = {};
  std::vector<DriveSpec> drives = named;
  std::vector<std::string> unknown;
  if (drives.empty()) {
    auto disc = discover_vfio_drives(env.sysfs, env.serials_json);
    drives = std::move(disc.drives);
    unknown = std::move(disc.unknown);
  }
  for (const auto& why : unknown) {
    Cell c;
    c.status = Status::waived;
    c.reason = why;
    c.extra["nvme"] = why.substr(0, why.find(' '));
    c.extra["writer"] = "none";
    cr.cells.push_back(std::move(c));
  }
  if (drives.empty() && unknown.empty()) {
    cr.status = Status::waived;
    cr.reason =
        "no NVMe drive is bound to vfio-pci on this box (nothing to ring; p2pnode binds the drives a "
        "profile names under nvme.drives with driver: vfio-pci)";
    return cr;
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& d : drives) {
    for (Writer w : writers) {
      Cell c = run_doorbell_cell(d, w, factory_for(w), env);
      c.step = cr.steps++;
      cr.cells.push_back(std::move(c));
    }
  }
  cr.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return cr;
}

}  // namespace p2pnode::agent::nvme
