#include "nvme/safety.hpp"

namespace p2pnode::nvme {

SafetyDecision decide_unbind_safety(const ControllerUse& use, bool wipe_ok) {
  SafetyDecision d;
  for (const auto& b : use.block_devices) {
    for (const auto& m : b.mountpoints) { d.reasons.push_back(b.name + " is mounted at " + m); }
    for (const auto& h : b.holders) { d.reasons.push_back(b.name + " is held by " + h + " (dm, md or LVM)"); }
    if (b.swap) { d.reasons.push_back(b.name + " is in use as swap"); }
    for (const auto& p : b.open_by) { d.reasons.push_back(b.name + " is open in process " + p); }
    if (b.hidden) {
      continue;  // a path node: its data is judged through the namespace head
    }
    std::string data;
    if (b.signature) {
      data = b.name + " carries data: " + *b.signature;
    } else if (b.unreadable) {
      data = b.name + ": signature unknown (" + *b.unreadable + ")";
    }
    if (data.empty()) { continue; }
    if (wipe_ok) {
      d.waived.push_back(data);
    } else {
      d.reasons.push_back(data);
    }
  }
  d.safe = d.reasons.empty();
  return d;
}

std::string describe_refusal(const ControllerUse& use, const SafetyDecision& d) {
  std::string ctrls;
  for (const auto& c : use.controllers) { ctrls += (ctrls.empty() ? "" : ", ") + c; }
  std::string s = "refusing to unbind " + use.bdf + (ctrls.empty() ? "" : " (" + ctrls + ")") + " from nvme: ";
  for (std::size_t i = 0; i < d.reasons.size(); ++i) { s += (i ? "; " : "") + d.reasons[i]; }
  const bool data_only = [&] {
    for (const auto& r : d.reasons) {
      if (r.find(" carries data: ") == std::string::npos && r.find(": signature unknown") == std::string::npos) {
        return false;
      }
    }
    return true;
  }();
  s += data_only ? " (set wipe_ok: true for this drive if its data may be lost)"
                 : " (unmount it, stop what holds it, swapoff; p2pnode never unbinds a drive in use)";
  return s;
}

}  // namespace p2pnode::nvme
