#pragma once
// One log event with the structured fields journald indexes (CHECK=, STEP=, DEVICE=). The engine
// emits these; service/ sends them to the journal or stderr.
#include <functional>
#include <string>

namespace p2pnode::engine {

enum class LogLevel { debug, info, notice, warning, error };

struct LogEvent {
  LogLevel level = LogLevel::info;
  std::string message;
  std::string check;   // a check id (rebar.aperture)
  std::string step;    // a reconcile step or an action (discover, apply, pcie.acs, selftest)
  std::string device;  // a PCI address
};

using LogFn = std::function<void(const LogEvent&)>;

}  // namespace p2pnode::engine
