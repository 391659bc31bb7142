#include "profile/remediation_reader.hpp"

#include <algorithm>

namespace p2pnode::profile {

// remediation: {rungs: [wait_idle, reset_gpu, reload_module, reboot], idle_wait: 2h, reboot_window: 24h}
void read_remediation(MapReader& root, Profile& p) {
  auto m = root.map("remediation", {"rungs", "idle_wait", "reboot_window"});
  if (!m) { return; }
  RemediationSpec spec;
  const auto rungs = m->sequence("rungs");
  if (rungs.empty() && !m->has("rungs")) {
    m->diag().add(m->node(), m->path(), "expected rungs: the steps the node may take, e.g. [wait_idle, reload_module]");
  }
  int last = -1;
  for (std::size_t i = 0; i < rungs.size(); ++i) {
    const std::string at = m->child_path("rungs") + "[" + std::to_string(i) + "]";
    const std::string word = rungs[i].IsScalar() ? rungs[i].Scalar() : "";
    const auto rung = rung_from(word);
    if (!rung) {
      m->diag().add(rungs[i], at,
                    "expected one of wait_idle, reset_gpu, reload_module, reboot, found " + describe_node(rungs[i]));
      continue;
    }
    const int index = static_cast<int>(*rung);  // the enum is in ladder order
    if (index <= last) {
      m->diag().add(rungs[i], at,
                    "expected the rungs in ladder order (wait_idle, reset_gpu, reload_module, reboot), "
                    "each once; '" +
                        word + "' comes too late");
      continue;
    }
    last = index;
    spec.rungs.push_back(*rung);
  }
  if (auto v = m->duration("idle_wait")) {
    if (*v < std::chrono::minutes(1)) {
      m->diag().add(m->get("idle_wait"), m->child_path("idle_wait"), "expected at least 1m");
    } else {
      spec.idle_wait = *v;
    }
  }
  if (auto v = m->duration("reboot_window")) {
    if (*v < std::chrono::hours(1)) {
      m->diag().add(m->get("reboot_window"), m->child_path("reboot_window"), "expected at least 1h");
    } else {
      spec.reboot_window = *v;
    }
  }
  // Every rung is followed by a self-test and only a passing one ends the ladder.
  if (!p.selftest) {
    m->diag().add(m->node(), m->path(),
                  "expected a selftest: section beside remediation: (a self-test follows every rung and only a passing "
                  "one makes the node ready again)");
  } else if (p.selftest->when == SelftestWhen::never) {
    m->diag().add(m->node(), m->path(),
                  "expected selftest.when idle or always beside remediation: (never runs no self-test, and only a "
                  "passing one ends the ladder)");
  }
  const bool reload = std::find(spec.rungs.begin(), spec.rungs.end(), Rung::reload_module) != spec.rungs.end();
  if (reload && !p.driver) {
    m->diag().add(m->get("rungs"), m->child_path("rungs"),
                  "expected a driver: section for reload_module (the module reloaded is the profile's)");
  }
  p.remediation = spec;
}

}  // namespace p2pnode::profile
