#pragma once
// The remediation ladder: what a node does by itself about a lost P2P path, one rung at a time, each
// only if the profile allows it (core/profile.hpp RemediationSpec): wait until the GPUs are idle (or
// the scheduler has the node out), reset the GPUs, reload the module, reboot (a drained node, at most
// once in the profile's window), then stop at "service required". Every rung is followed by a
// self-test; the node is ready again only when one passes. Pure: the record of where the ladder
// stands is data the engine persists, so a crash or a power cut mid-ladder resumes where it was and
// never takes a rung twice.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/profile.hpp"

namespace p2pnode::remediation {

// One rung taken: what the node saw before it and what the self-test after it said.
struct RungTaken {
  Rung rung = Rung::wait_idle;
  std::int64_t taken_unix = 0;
  std::string before;   // the lost P2P path that made the node take it
  std::string after;    // the self-test after it ("passed", "failed: …"); empty until one ran
  std::string outcome;  // "taken", or why the rung's command failed
};
constexpr std::size_t kRungHistory = 16;  // the last rungs kept in the record

// Where the ladder stands (persisted in the state file).
struct LadderRecord {
  bool active = false;  // a ladder is under way (false: only last_reboot_unix matters)
  std::string trigger;  // the lost P2P path that started it
  std::int64_t started_unix = 0;
  std::uint64_t selftests_at = 0;  // judged self-tests so far when it started or the last rung was taken
  std::size_t next = 0;            // the next rung to try: an index into the profile's rungs
  std::optional<Rung> taken;       // the rung taken last, until a self-test after it says how it went
  std::int64_t taken_unix = 0;
  std::int64_t waiting_since_unix = 0;  // a rung that needs idle GPUs or a drained node is waiting since
  std::int64_t last_reboot_unix = 0;    // kept across ladders: at most one reboot in the window
  bool service_required = false;        // every allowed rung was taken, or a wait ran out: a person's turn
  std::string why;                      // the last decision's reason, for /v1/status
  std::vector<RungTaken> history;       // the last kRungHistory rungs, across ladders
};

// What the pass saw.
struct LadderInputs {
  std::optional<std::string> lost_p2p;  // why P2P is lost now (a health finding, a failed self-test)
  // Self-tests judged so far (a count that only grows: one started in the same second as a rung is
  // still told apart), whether the last one passed, and its verdict in words.
  std::uint64_t selftests = 0;
  bool selftest_passed = false;
  std::string selftest_said;
  // The health pass: whether it watches, and when it last read the box. A rung ends the ladder only
  // once a health pass after it no longer reports P2P lost (its findings before the rung are stale).
  bool health_watching = false;
  std::int64_t health_read_unix = 0;
  bool gpus_idle = false;  // no compute process on the GPUs
  bool drained = false;    // idle, and the scheduler (when the profile names one) has no job on the node
  std::int64_t now_unix = 0;
};

enum class LadderAction {
  none,              // nothing lost, no ladder
  wait,              // a rung waits for idle GPUs or a drained node, or for the self-test after a rung
  take,              // take `rung` now (then run a self-test)
  recovered,         // a self-test passed after a rung and nothing is lost: the ladder ends
  service_required,  // nothing more the node may do by itself
};
const char* to_string(LadderAction a);

struct LadderDecision {
  LadderAction action = LadderAction::none;
  std::optional<Rung> rung;  // take: which
  std::string why;           // one line for the journal and /v1/status
};

// The decision for this pass, and the record after it. Taking a rung advances the record before the
// rung runs, so a crash during it never takes the same rung again.
struct LadderStep {
  LadderDecision decision;
  LadderRecord record;
};
LadderStep decide_ladder(LadderRecord record, const RemediationSpec& spec, const LadderInputs& in);

// Whether the ladder wants a self-test now: one is under way and none was judged since its last event
// (it started, or a rung was taken). selftests: judged so far.
bool wants_selftest(const LadderRecord& record, std::uint64_t selftests);

}  // namespace p2pnode::remediation
