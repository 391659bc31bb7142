// p2pnode-nvme-doorbell: the nvme_doorbell case with the host CPU as the doorbell writer, built
// without CUDA so that it runs where no NVIDIA driver or compiler is (the VM, a box without GPUs).
// It prints the agent's JSON document (api/agent-result.schema.json) with that one case.
// p2pnode-agent runs the same code with the GPU writer as well (--cases nvme_doorbell).
#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>

#include "p2pnode/agent/nvme/doorbell_case.hpp"
#include "p2pnode/agent/options.hpp"

#ifndef P2PNODE_AGENT_VERSION
#define P2PNODE_AGENT_VERSION "0.0.0"
#endif

using namespace p2pnode::agent;
using namespace p2pnode::agent::nvme;

int main(int argc, char** argv) {
  CLI::App app{
      "p2pnode-nvme-doorbell: Identify Controller on NVMe drives bound to vfio-pci, the admin SQ tail "
      "doorbell written by the host CPU; prints the agent's JSON document"};
  std::vector<std::string> specs;
  std::string writer = "host", format = "json";
  int ready_ms = 10000, completion_ms = 2000;
  CaseEnv env;
  app.add_option("--nvme", specs,
                 "bdf=0000:0b:00.0,serial=S[,model=M][,gpu=0000:0a:00.0] (repeatable); none: every NVMe on "
                 "vfio-pci with a serial in --serials");
  app.add_option("--writer", writer, "host (a GPU writer needs p2pnode-agent, built with CUDA)")
      ->check(CLI::IsMember({"host", "gpu", "both"}));
  app.add_option("--ready-timeout-ms", ready_ms, "longest wait for CSTS.RDY (CAP.TO bounds it too)")
      ->check(CLI::Range(1, 600000));
  app.add_option("--completion-timeout-ms", completion_ms, "longest wait for the completion")
      ->check(CLI::Range(1, 60000));
  app.add_option("--format", format)->check(CLI::IsMember({"json", "table"}));
  app.add_option("--sysfs", env.sysfs, "sysfs root");
  app.add_option("--serials", env.serials_json, "p2pnode's remembered serials");
  app.set_version_flag("--version", P2PNODE_AGENT_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) { return app.exit(e); }
  if (writer != "host") {
    std::cerr << "p2pnode-nvme-doorbell: --writer " << writer
              << ": this program has no GPU writer (it is built without CUDA); run p2pnode-agent --cases "
                 "nvme_doorbell --writer "
              << writer << "\n";
    return 2;
  }
  std::vector<DriveSpec> drives;
  for (const auto& s : specs) {
    std::string err;
    auto d = parse_drive_spec(s, err);
    if (!d) {
      std::cerr << "p2pnode-nvme-doorbell: " << err << "\n";
      return 2;
    }
    drives.push_back(*d);
  }
  env.timing.ready_limit = std::chrono::milliseconds(ready_ms);
  env.timing.completion_limit = std::chrono::milliseconds(completion_ms);

  const auto t0 = std::chrono::steady_clock::now();
  Report rep;
  rep.agent_version = P2PNODE_AGENT_VERSION;
  rep.started_at = rfc3339_utc(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  const Options defaults;  // the agent's configuration block, as p2pnode-agent would report it
  rep.iterations = defaults.iterations;
  rep.copies = defaults.copies;
  rep.warmup = defaults.warmup;
  rep.latency_accesses = defaults.latency_accesses;
  rep.latency_sms = defaults.latency_sms;
  auto host_factory = [](Writer) -> WriterFactory {
    return [](VfioNvme& dev, const DriveSpec&, std::string&) -> std::unique_ptr<DoorbellWriter> {
      return std::make_unique<HostDoorbellWriter>(dev);
    };
  };
  rep.cases.push_back(run_doorbell_case(drives, {Writer::host}, host_factory, env));
  rep.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  finalize(rep);
  if (format == "table") {
    std::cout << render_table(rep);
  } else {
    std::cout << to_json(rep).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return rep.exit_code;
}
