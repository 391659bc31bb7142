// Denied peer access, explained from the evidence: mixed models, IOMMU translating with a small
// BAR (the BIOS-default tinybox), the stock driver on GeForce, an Intel root complex with no
// switch; and no false cause on a healthy NVLink box behind an Intel host bridge.
#include "judge/peer_denied.hpp"
#include "judge/verdict.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "probe/probe.hpp"
#include "unit/source_files.hpp"

namespace fs = std::filesystem;
using namespace p2pnode;
using namespace p2pnode::judge;
using nlohmann::json;

namespace {
using p2pnode::test_files::kSrc;
Inventory fixture(const char* name) { return probe::probe_inventory(sys::SysRoot(kSrc / "tests/fixtures" / name)); }

// The recorded 2-GPU document moved onto two GPUs of a fixture, with peer access refused.
AgentResult denied(const std::string& bdf0, const std::string& name0, const std::string& bdf1, const std::string& name1,
                   const std::string& nvml_status) {
  json d = p2pnode::test_files::nv18_run();
  d["devices"][0]["pci_bus_id"] = bdf0;
  d["devices"][0]["name"] = name0;
  d["devices"][0]["compute_capability"] = "8.9";
  d["devices"][1]["pci_bus_id"] = bdf1;
  d["devices"][1]["name"] = name1;
  d["devices"][1]["compute_capability"] = "8.9";
  json st = json::object();
  if (!nvml_status.empty()) { st = {{"read", nvml_status}, {"write", nvml_status}, {"nvlink", "not_supported"}}; }
  d["interconnect"]["pairs"] = json::array({{{"gpus", {0, 1}}, {"link", "PCIe"}, {"nvlinks", 0}, {"p2p_status", st}}});
  for (auto& c : d["cases"]) {
    if (c["key"] == "peer_access") {
      c["status"] = "failed";
      for (auto& cell : c["cells"]) {
        cell["peer_access"] = 0;
        cell["status"] = "failed";
        cell["reason"] = "cudaDeviceCanAccessPeer: 0";
      }
    }
  }
  d["status"] = "failed";
  d["exit_code"] = 1;
  d["summary"]["cases_failed"] = 1;
  auto r = check_agent_document(d);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : AgentResult{};
}
std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) { s += x + " | "; }
  return s;
}
}  // namespace

TEST(PeerDenied, MixedModels) {
  const auto inv = fixture("mixed-4090-4060ti");
  const auto r = denied("0000:01:00.0", "NVIDIA GeForce RTX 4090", "0000:41:00.0", "NVIDIA GeForce RTX 4060 Ti", "");
  const auto why = explain_denied_peer_access(r, 0, 1, inv);
  ASSERT_FALSE(why.empty());
  EXPECT_EQ(why[0].rfind("mixed models (NVIDIA GeForce RTX 4090 and NVIDIA GeForce RTX 4060 Ti)", 0), 0u)
      << joined(why);
}

TEST(PeerDenied, IommuTranslatingAndNoLargeBarOnTheBiosDefaultTinybox) {
  const auto inv = fixture("tinybox-6x4090-bios-default");
  const auto r = denied("0000:01:00.0", "NVIDIA GeForce RTX 4090", "0000:42:00.0", "NVIDIA GeForce RTX 4090", "ok");
  const auto s = joined(explain_denied_peer_access(r, 0, 1, inv));
  EXPECT_NE(s.find("the IOMMU translates DMA"), std::string::npos) << s;
  EXPECT_NE(s.find("no large BAR on 0000:01:00.0: its VRAM aperture is 256 MiB, below its 24 GiB of VRAM"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("GeForce GPUs"), std::string::npos) << s;  // NVML said ok: not the driver
  EXPECT_EQ(s.find("mixed"), std::string::npos) << s;
}

TEST(PeerDenied, StockDriverOnGeforce) {
  const auto inv = fixture("tinybox-6x4090");  // BIOS fixed, IOMMU off, AMD: only the driver is left
  const auto r =
      denied("0000:01:00.0", "NVIDIA GeForce RTX 4090", "0000:42:00.0", "NVIDIA GeForce RTX 4090", "gpu_not_supported");
  const auto why = explain_denied_peer_access(r, 0, 1, inv);
  ASSERT_EQ(why.size(), 1u) << joined(why);
  EXPECT_NE(why[0].find("GeForce GPUs: NVIDIA's stock driver does not enable P2P on GeForce (NVML: gpu_not_supported)"),
            std::string::npos)
      << why[0];
}

TEST(PeerDenied, IntelRootComplexWithoutASwitch) {
  const auto inv = fixture("h200-4gpu");  // Intel host bridge 8086, GPUs on root ports (PHB)
  const auto r = denied("0000:00:06.0", "NVIDIA H200", "0000:00:07.0", "NVIDIA H200", "chipset_not_supported");
  const auto why = explain_denied_peer_access(r, 0, 1, inv);
  ASSERT_EQ(why.size(), 1u) << joined(why);
  EXPECT_NE(why[0].find("Intel root complex with no PCIe switch between the GPUs (PHB)"), std::string::npos) << why[0];
  EXPECT_NE(why[0].find("NVML: chipset_not_supported, CNS"), std::string::npos) << why[0];
}

TEST(PeerDenied, NothingInventedWhenTheEvidenceIsClean) {
  const auto inv = fixture("h200-4gpu");
  const auto r = denied("0000:00:06.0", "NVIDIA H200", "0000:00:07.0", "NVIDIA H200", "ok");
  EXPECT_TRUE(explain_denied_peer_access(r, 0, 1, inv).empty());
  // The judge says so in words.
  const auto j = judge_agent_result(r, SelftestSpec{}, inv);
  EXPECT_EQ(j.verdict, "failed");
  bool said = false;
  for (const auto& s : j.reasons) { said |= s.find("denied: no cause found in the evidence") != std::string::npos; }
  EXPECT_TRUE(said) << joined(j.reasons);
}

// NVML and CUDA disagree (aikitoria#13: `nvidia-smi topo -p2p` said OK for pairs CUDA refused): the
// verdict follows CUDA and the reason says NVML thought otherwise; the other way round, CUDA allowed
// it and the copies ran, the run passes and a note says what NVML reported.
TEST(PeerDenied, NvmlAndCudaDisagreeingIsSaidAndCudaDecides) {
  const auto inv = fixture("h200-4gpu");
  const auto r = denied("0000:00:06.0", "NVIDIA H200", "0000:00:07.0", "NVIDIA H200", "ok");
  const auto j = judge_agent_result(r, SelftestSpec{}, inv);
  EXPECT_EQ(j.verdict, "failed");
  bool said = false;
  for (const auto& s : j.reasons) {
    said |= s.find(
                "NVML reports P2P read ok, write ok for this pair (what nvidia-smi topo -p2p shows), yet CUDA does not "
                "allow peer access (cudaDeviceCanAccessPeer 0): the self-test's word decides") != std::string::npos;
  }
  EXPECT_TRUE(said) << joined(j.reasons);
  EXPECT_TRUE(j.notes.empty());

  // CUDA allows it, NVML says chipset_not_supported: the run is judged on CUDA's word.
  json d = p2pnode::test_files::nv18_run();
  for (auto& p : d["interconnect"]["pairs"]) {
    p["p2p_status"] = {{"read", "chipset_not_supported"}, {"write", "chipset_not_supported"}, {"nvlink", "ok"}};
  }
  const auto ok = check_agent_document(d);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  const auto jo = judge_agent_result(*ok, SelftestSpec{}, fixture("h200-4gpu"));
  EXPECT_EQ(jo.verdict, "passed") << joined(jo.reasons);
  ASSERT_FALSE(jo.notes.empty());
  EXPECT_NE(
      jo.notes[0].find("NVML reports P2P read chipset_not_supported, write chipset_not_supported for this pair "
                       "(what nvidia-smi topo -p2p shows), yet CUDA allows peer access and the self-test's copies "
                       "ran: the self-test's word decides"),
      std::string::npos)
      << jo.notes[0];
  EXPECT_EQ(nvml_cuda_disagreement(*ok, 0, 1, false), std::nullopt);  // NVML's "no" agrees with a refusal
}
