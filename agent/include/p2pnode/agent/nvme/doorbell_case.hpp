// The `nvme_doorbell` case, shared by p2pnode-agent (host and GPU writers) and
// p2pnode-nvme-doorbell (the host writer alone, built without CUDA): which drives, their expected
// identity, and one result cell per drive and writer.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "p2pnode/agent/nvme/doorbell_test.hpp"
#include "p2pnode/agent/nvme/vfio.hpp"
#include "p2pnode/agent/report.hpp"

namespace p2pnode::agent::nvme {

inline constexpr const char* kCaseKey = "nvme_doorbell";
inline constexpr const char* kCaseDescription =
    "NVMe doorbell: Identify Controller on a drive bound to vfio-pci, the admin SQ tail doorbell "
    "written by the host CPU or by a GPU kernel (posted write to BAR0), the completion polled in "
    "host memory, serial and model checked against what sysfs recorded; controller left disabled";

// --nvme bdf=0000:0b:00.0,serial=S[,model=M][,gpu=0000:0a:00.0]
struct DriveSpec {
  std::string bdf;
  std::string serial;
  std::string model;
  std::string pair_gpu;  // PCI address of the GPU that writes the doorbell ("" : the first GPU)
};
std::optional<DriveSpec> parse_drive_spec(std::string_view text, std::string& error);

enum class Writer { host, gpu };
const char* to_string(Writer w);
// "host", "gpu" or "both" (gpu first, then host, so a failure says which side is broken).
std::optional<std::vector<Writer>> parse_writers(std::string_view text);

// Drives to test when none is named: every NVMe function (class 0x0108xx) bound to vfio-pci, with
// the serial and model p2pnode remembered when it bound it (<state>/nvme-serials.json).
struct Discovery {
  std::vector<DriveSpec> drives;
  std::vector<std::string> unknown;  // on vfio-pci but no remembered serial: why, per drive
};
Discovery discover_vfio_drives(const std::string& sysfs, const std::string& serials_json);

struct CaseEnv {
  std::string sysfs = "/sys";
  std::string dev = "/dev";
  std::string serials_json = "/var/lib/p2pnode/nvme-serials.json";
  DoorbellTiming timing;
};

// Makes the writer for a drive; on failure returns nullptr and says why in `why` (the cell fails).
using WriterFactory =
    std::function<std::unique_ptr<DoorbellWriter>(VfioNvme& dev, const DriveSpec& d, std::string& why)>;

// One cell: opens the drive through VFIO, runs the Identify round trip with the writer, closes.
// A drive not on vfio-pci or held by another process is waived with the reason (never touched).
Cell run_doorbell_cell(const DriveSpec& d, Writer writer, const WriterFactory& make_writer, const CaseEnv& env);

// The whole case: the named drives (or the discovered ones) times the writers. Waived with the
// reason when there is no drive to test.
CaseResult run_doorbell_case(const std::vector<DriveSpec>& named, const std::vector<Writer>& writers,
                             const std::function<WriterFactory(Writer)>& factory_for, const CaseEnv& env);

}  // namespace p2pnode::agent::nvme
