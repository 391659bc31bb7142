# The serve scenario, sourced by /init after scenarios.sh: `p2pnode serve` under a real
# journald and a real udevd (neither needs systemd as PID 1), its sd-device monitor driven by a
# real remove + rescan and a real unbind + bind of an emulated NVMe drive, its log read back with
# journalctl -o json. The host put systemd-journald, systemd-udevd (udevadm), journalctl,
# systemd-cat, jq and p2pnode-serve in; the daemon's configuration and profile are in /guest/serve/.

start_journald() {
  # Not socket-activated, journald binds /run/systemd/journal/{socket,stdout} and /dev/log itself;
  # without /var/log/journal it keeps the journal in /run/log/journal/<machine-id>. It refuses to
  # start without the cgroup root ("Failed to acquire cgroup root path: No medium found").
  mkdir -p /sys/fs/cgroup /run/systemd/journal /run/log/journal
  mount -t cgroup2 cgroup2 /sys/fs/cgroup
  tr -d - </proc/sys/kernel/random/uuid >/etc/machine-id
  /lib/systemd/systemd-journald >/tmp/journald.out 2>&1 &
  wait_for 30 sh -c 'echo probe | systemd-cat --identifier=p2ptest-probe'
}
start_udevd() {
  # No rules and no hwdb: udevd still passes every kernel uevent on to the udev netlink group,
  # which is what sd_device_monitor listens to.
  /lib/systemd/systemd-udevd --daemon >/tmp/udevd.out 2>&1
  wait_for 30 test -S /run/udev/control
}

PORT=
api() { wget -q -O - "http://127.0.0.1:$PORT$1"; }
# GET /v1/status into /tmp/status.json (the checks then read it); fails when the daemon does not answer.
get_status() { api /v1/status >/tmp/status.json.new && mv /tmp/status.json.new /tmp/status.json; }
runs() { jq '[.reconcile.runs[]] | add // 0' /tmp/status.json; }
field() { jq -c "$1" /tmp/status.json; }
# A pass has decided and nothing is running or queued.
settled() {
  get_status && jq -e '.state != "starting" and .reconcile.running == false and .reconcile.queued == false' /tmp/status.json >/dev/null
}
# settled_after N [JQ-CONDITION]: settled, more than N passes so far, and the condition holds.
settled_after() { settled && [ "$(runs)" -gt "$1" ] && jq -e "${2:-true}" /tmp/status.json >/dev/null; }
summary() { show "$1: state $(field .state), runs $(field .reconcile.runs), trigger $(field .reconcile.last_trigger), reasons $(field .reasons)"; }
# journal ARGS...: the daemon's entries, one JSON object per line.
journal() { journalctl --no-pager -o json SYSLOG_IDENTIFIER=p2pnode "$@"; }
journal_says() {  # journal_says TEXT MATCHES...: an entry with these fields whose MESSAGE has TEXT
  local text=$1
  shift
  journal "$@" | jq -r .MESSAGE | grep -qF "$text"
}
# The last line of /tmp/messages.txt (the daemon's messages in order) with TEXT, 0 when none.
last_line() { { grep -nF "$1" /tmp/messages.txt || echo 0:; } | tail -1 | cut -d: -f1; }

scenario_serve() {
  check "journald started without systemd as PID 1" start_journald
  check "udevd started (--daemon, no rules)" start_udevd
  ip link set lo up
  udevadm monitor --udev --subsystem-match=pci --subsystem-match=nvme --property >/tmp/udev-monitor.txt 2>&1 &
  local udevmon=$!
  load_nvme 1
  local b t
  b=$(bdf_of_serial P2PVM-A)
  t=$(for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor):$(cat $d/device)" = 0x1b36:0x0005 ] && basename $d; done)
  show "drive P2PVM-A at $b (class $(cat $(dev $b)/class)), pci-testdev at $t (class $(cat $(dev $t)/class))"
  check "drive P2PVM-A found on nvme" eq "$(driver $b)" nvme

  # systemd-cat connects stdout and stderr to a journal stream but does not set JOURNAL_STREAM;
  # systemd does, for a service: <st_dev>:<st_ino> of that stream. Set it the same way.
  systemd-cat --identifier=p2ptest-env sh -c 'echo "JOURNAL_STREAM=${JOURNAL_STREAM:-unset}"'
  wait_for 10 sh -c 'journalctl --no-pager -o cat SYSLOG_IDENTIFIER=p2ptest-env | grep -q JOURNAL_STREAM'
  show "under systemd-cat alone: $(journalctl --no-pager -o cat SYSLOG_IDENTIFIER=p2ptest-env)"
  (umask 077; mkdir -p /etc/p2pnode; echo 0123456789abcdef0123456789abcdef >/etc/p2pnode/token)
  systemd-cat --identifier=p2pnode-stderr sh -c \
    'export JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2); exec /bin/p2pnode serve --config /guest/serve/p2pnode.yaml --port-file /tmp/port' &
  local daemon=$!
  check "serve: listening (port file written)" wait_for 60 test -s /tmp/port
  PORT=$(cat /tmp/port 2>/dev/null)
  check "serve: first reconcile decided" wait_for 120 settled
  if ! settled; then
    journalctl --no-pager -o short SYSLOG_IDENTIFIER=p2pnode + SYSLOG_IDENTIFIER=p2pnode-stderr | sed 's/^/P2P-OUT /'
    return
  fi
  local s0 r0 n
  s0=$(field .state)
  r0=$(field .reasons)
  n=$(runs)
  summary "first pass"
  check "serve: first pass triggered by start" eq "$(field .reconcile.last_trigger)" '"start"'
  check "serve: first pass sees the drive" eq "$(field .counts.nvme)" 1
  check "serve: monitor started (no warning about it)" sh -c '! journalctl --no-pager -o cat SYSLOG_IDENTIFIER=p2pnode | grep -q "monitor not started"'

  # A PCI device the node does not care about (pci-testdev, class 00ff00) leaves and comes back:
  # no reconcile. udevadm settle returns once udevd has passed both events on.
  echo 1 >$(dev $t)/remove
  echo 1 >/sys/bus/pci/rescan
  wait_for 20 test -e $(dev $t)
  udevadm settle -t 20
  sleep 2  # the negative case: the time the monitor's thread would need to react
  get_status
  check "pci-testdev $t removed and added: no reconcile" eq "$(runs)" "$n"

  # The drive is removed (the nvme driver lets go, then the device goes): the daemon reconciles
  # and no longer sees it.
  echo 1 >$(dev $b)/remove
  check "remove: a new reconcile ran, the drive is gone from the status" \
    wait_for 60 settled_after $n '.counts.nvme == 0 and .reconcile.last_trigger == "device"'
  n=$(runs)
  summary "after remove"
  check "remove: journal says why (STEP=monitor DEVICE=$b)" \
    wait_for 10 journal_says "PCI device $b removed: reconciling" STEP=monitor DEVICE=$b

  # Rescan: the drive comes back and nvme binds it; its serial is readable once the controller has
  # connected, after the bind. The daemon must end where it started without any other trigger.
  echo 1 >/sys/bus/pci/rescan
  check "rescan: nvme bound the drive again" wait_for 30 test -e $(dev $b)/nvme
  check "rescan: a new reconcile ran, the node is back to its first state ($s0, $r0)" \
    wait_for 60 settled_after $n ".counts.nvme == 1 and .state == $s0 and .reasons == $r0"
  n=$(runs)
  summary "after rescan"
  check "rescan: trigger is device" eq "$(field .reconcile.last_trigger)" '"device"'
  check "rescan: journal says why (added)" wait_for 10 journal_says "PCI device $b added: reconciling" DEVICE=$b
  check "rescan: journal says why (bound to nvme)" journal_says "PCI device $b bound to nvme: reconciling" DEVICE=$b
  check "rescan: journal says why (controller connected)" \
    wait_for 10 journal_says "NVMe controller nvme0 on $b connected: reconciling" DEVICE=$b

  # A driver change without hotplug: nvme lets go of the drive (an operator, another tool), then
  # takes it back. The node's state depends on the driver, so each is a reconcile.
  echo $b >/sys/bus/pci/drivers/nvme/unbind
  check "unbind: a new reconcile ran, the node is no longer in its first state" \
    wait_for 60 settled_after $n ".reasons != $r0"
  n=$(runs)
  summary "after unbind"
  check "unbind: journal says why" journal_says "PCI device $b unbound from its driver: reconciling" STEP=monitor DEVICE=$b
  echo $b >/sys/bus/pci/drivers/nvme/bind
  check "bind: nvme bound the drive again" wait_for 30 test -e $(dev $b)/nvme
  check "bind: a new reconcile ran, the node is back to its first state" \
    wait_for 60 settled_after $n ".counts.nvme == 1 and .state == $s0 and .reasons == $r0"
  n=$(runs)
  summary "after bind"

  # A reconcile began after the controller connected (the last hotplug line), so the drive's
  # serial was readable to it; the nvme driver binds before it has identified the controller.
  journalctl --no-pager -o cat SYSLOG_IDENTIFIER=p2pnode >/tmp/messages.txt
  check "bind: a pass began after the controller connected" \
    sh -c "[ $(last_line "nvme0 on $b connected: reconciling") -gt 0 ] && [ $(last_line 'reconcile (device): discovering') -gt $(last_line "nvme0 on $b connected: reconciling") ]"
  api /metrics >/tmp/metrics.txt
  check "metrics: p2pnode_reconcile_runs_total sums to $n" \
    eq "$(grep '^p2pnode_reconcile_runs_total' /tmp/metrics.txt | awk '{s += $2} END {print s}')" "$n"

  # The journal: structured entries through the native protocol, not lines on the stream.
  journal >/tmp/journal.json
  check "journal: p2pnode entries" test -s /tmp/journal.json
  check "journal: all through the native protocol (_TRANSPORT=journal)" \
    eq "$(jq -r ._TRANSPORT /tmp/journal.json | sort -u | tr '\n' ' ')" "journal "
  check "journal: nothing on the stderr stream" eq "$(journalctl --no-pager -o cat SYSLOG_IDENTIFIER=p2pnode-stderr | wc -l)" 0
  check "journal: every entry has a PRIORITY" eq "$(jq -s 'map(select(.PRIORITY == null)) | length' /tmp/journal.json)" 0
  check "journal: listening logged at notice (PRIORITY=5, STEP=http)" journal_says "listening on http://127.0.0.1:$PORT" STEP=http PRIORITY=5
  check "journal: hotplug lines at notice (PRIORITY=5 STEP=monitor DEVICE=$b)" journal_says "reconciling" STEP=monitor DEVICE=$b PRIORITY=5
  check "journal: each device pass logged with STEP=discover, the trigger in the message" \
    sh -c "[ \$(journalctl --no-pager -o cat SYSLOG_IDENTIFIER=p2pnode STEP=discover | grep -c '^reconcile (device): discovering') -ge 4 ]"
  check "journal: one STEP=record result per pass ($n)" eq "$(journal STEP=record | wc -l)" "$n"
  check "journal: a finding with CHECK= and DEVICE= (no NVIDIA GPU: gpu.models, node)" \
    journal_says "no NVIDIA GPU" STEP=check CHECK=gpu.models DEVICE=node PRIORITY=3
  check "journal: the pass without the drive says why, at warning (STEP=record PRIORITY=4)" \
    journal_says "no NVMe controller matches the drive with serial P2PVM-A" STEP=record PRIORITY=4
  check "journal: no entry about pci-testdev $t" eq "$(grep -c "$t" /tmp/journal.json)" 0
  check "journal: no empty CHECK/STEP/DEVICE field" \
    eq "$(jq -c -s '[.[] | to_entries[] | select(.value == "") | .key] | unique' /tmp/journal.json)" "[]"
  check "journal: no CODE_FILE naming the logger" eq "$(jq -s 'map(select(.CODE_FILE)) | length' /tmp/journal.json)" 0

  kill -TERM $daemon
  check "serve: stops on SIGTERM" wait_for 30 sh -c "! kill -0 $daemon"
  check "journal: stopping logged" wait_for 10 journal_says "stopping on SIGTERM" STEP=signal
  kill $udevmon 2>/dev/null
  show "udev passed on $(grep -c '^UDEV' /tmp/udev-monitor.txt) pci/nvme events"
  grep '^UDEV' /tmp/udev-monitor.txt | sed 's/^/P2P-INFO udev: /'
  journalctl --no-pager -o short-monotonic SYSLOG_IDENTIFIER=p2pnode | sed 's/^/P2P-OUT /'
}
