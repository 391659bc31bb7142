#pragma once
// The "nvme.bind" action: the profile's NVMe drives onto vfio-pci (or back to nvme), safely, with
// the power and command fix-ups vfio-pci needs, and remove+rescan recovery when BAR0 reads all-Fs.
#include <chrono>
#include <memory>

#include "actions/action.hpp"

namespace p2pnode::actions {

struct NvmeBindTiming {
  std::chrono::milliseconds settle{2000};  // longest wait for a driver link, D0, a rescan
  std::chrono::milliseconds poll{20};      // between reads while waiting
  std::chrono::milliseconds backoff{250};  // before the first remove+rescan; doubles each time
  int recoveries = 3;                      // remove+rescan attempts before giving up
};

std::unique_ptr<Action> make_nvme_bind(NvmeBindTiming timing = {});

}  // namespace p2pnode::actions
