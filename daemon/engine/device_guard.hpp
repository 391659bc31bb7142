#pragma once
// PCI events that only echo p2pnode's own changes must not drive reconciles for ever. Binding a
// drive to vfio-pci, or a remove + rescan recovery, makes the kernel announce unbind/bind/add, and
// each announcement asks for a reconcile: one more pass is right (it finds nothing left to do).
// Passes that keep changing the box mean p2pnode is chasing its own tail (say, a recovery that
// keeps failing). After kMaxStreak device-triggered passes in a row that changed the box, device
// events are ignored until a pass from another trigger (start, SIGHUP, the API, the schedule).
// Pure: the engine feeds it each pass's trigger and whether the pass changed the box.
#include <string_view>

namespace p2pnode::engine {

class DeviceLoopGuard {
 public:
  static constexpr int kMaxStreak = 3;
  void after_pass(std::string_view trigger, bool changed_box) {
    streak_ = trigger == "device" && changed_box ? streak_ + 1 : 0;
  }
  bool allows(std::string_view trigger) const { return trigger != "device" || streak_ < kMaxStreak; }
  int streak() const { return streak_; }

 private:
  int streak_ = 0;
};

}  // namespace p2pnode::engine
