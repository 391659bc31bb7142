#pragma once
// systemd glue: sd_notify (READY=1, STATUS=, WATCHDOG=1, RELOADING=1) and journald logging with
// structured fields (CHECK=, STEP=, DEVICE=). Without systemd these are no-ops and logs go to stderr.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "engine/log.hpp"

namespace p2pnode::service {

void notify_ready(const std::string& status);
void notify_status(const std::string& status);
void notify_reloading();
void notify_watchdog();
void notify_stopping();
// Half of WatchdogSec= when the unit has one (the interval to ping at), else nullopt.
std::optional<std::chrono::microseconds> watchdog_ping_interval();

// The journal entry for one event, as FIELD=value strings: MESSAGE, PRIORITY (syslog level),
// SYSLOG_IDENTIFIER=p2pnode, and CHECK/STEP/DEVICE only where the event has them (journalctl
// DEVICE=0000:0b:00.0 then lists just the lines about that device).
std::vector<std::string> journal_fields(const engine::LogEvent& e);
// True when stderr is the journal's stream (JOURNAL_STREAM matches): send structured entries.
bool stderr_is_journal();
// The log sink the engine and the CLI use: journald when under it, else one line on stderr.
engine::LogFn make_logger(bool verbose);

}  // namespace p2pnode::service
