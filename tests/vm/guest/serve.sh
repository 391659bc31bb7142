# The serve scenario (issue 7), sourced by /init after scenarios.sh: `p2pnode serve` under a real
# journald and a real udevd (neither needs systemd as PID 1), its PCI hotplug monitor driven by a
# real remove + rescan of an emulated NVMe drive, its log read back with journalctl -o json.
# The host put systemd-journald, systemd-udevd (udevadm), journalctl, systemd-cat, jq and
# p2pnode-serve in; the daemon's configuration and profile are in /guest/serve/.
SERVE=/guest/serve

start_journald() {
  # Not socket-activated, journald binds /run/systemd/journal/{socket,stdout} and /dev/log itself;
  # without /var/log/journal it keeps the journal in /run/log/journal/<machine-id>.
  # It also wants the cgroup root (it refuses to start without it: "No medium found").
  mkdir -p /sys/fs/cgroup
  mount -t cgroup2 cgroup2 /sys/fs/cgroup
  tr -d - </proc/sys/kernel/random/uuid >/etc/machine-id
  mkdir -p /run/systemd/journal /run/log/journal
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
# GET /v1/status into /tmp/status.json (which the checks then read); fails when the daemon does not answer.
get_status() { api /v1/status >/tmp/status.json.new && mv /tmp/status.json.new /tmp/status.json; }
runs_of_status() { jq '[.reconcile.runs[]] | add // 0' /tmp/status.json; }
runs() { get_status && runs_of_status; }
# A pass has decided and nothing is running or queued.
settled() {
  get_status && jq -e '.state != "starting" and .reconcile.running == false and .reconcile.queued == false' /tmp/status.json >/dev/null
}
settled_after() { settled && [ "$(runs_of_status)" -gt "$1" ]; }
# journal ARGS...: the daemon's entries, one JSON object per line.
journal() { journalctl --no-pager -o json SYSLOG_IDENTIFIER=p2pnode "$@"; }
journal_has() { [ "$(journal "$@" | wc -l)" -gt 0 ]; }
pci_class_of() { cat $(dev $1)/class; }

scenario_serve() {
  check "journald started without systemd as PID 1" start_journald
  check "udevd started (--daemon, no rules)" start_udevd
  ip link set lo up
  udevadm monitor --udev --subsystem-match=pci >/tmp/udev-monitor.txt 2>&1 &
  local udevmon=$!
  load_nvme 1
  local b t
  b=$(bdf_of_serial P2PVM-A)
  t=$(for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor):$(cat $d/device)" = 0x1b36:0x0005 ] && basename $d; done)
  show "drive P2PVM-A at $b (class $(pci_class_of $b)), pci-testdev at $t (class $(pci_class_of $t))"
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
  local s0 r0 n0 n1 n2
  s0=$(jq -r .state /tmp/status.json)
  r0=$(jq -c .reasons /tmp/status.json)
  n0=$(runs_of_status)
  show "first pass: state $s0, runs $(jq -c .reconcile.runs /tmp/status.json), trigger $(jq -r .reconcile.last_trigger /tmp/status.json), reasons $(jq -c .reasons /tmp/status.json)"
  check "serve: first pass triggered by start" eq "$(jq -r .reconcile.last_trigger /tmp/status.json)" start
  check "serve: first pass sees the drive" eq "$(jq .counts.nvme /tmp/status.json)" 1
  check "serve: monitor started (no warning about it)" sh -c '! journalctl --no-pager -o cat SYSLOG_IDENTIFIER=p2pnode | grep -q "monitor not started"'

  # A PCI device the node does not care about (pci-testdev, class 00ff00) leaves and comes back:
  # no reconcile. udevadm settle returns once udevd has passed both events on.
  echo 1 >$(dev $t)/remove
  echo 1 >/sys/bus/pci/rescan
  wait_for 20 test -e $(dev $t)
  udevadm settle -t 20
  sleep 2  # the negative case: give the monitor's thread time it would need to react
  check "non-matching device $t removed and added: no reconcile" eq "$(runs)" "$n0"

  # The drive is removed: a reconcile with trigger "device", logged with DEVICE=<bdf>.
  echo 1 >$(dev $b)/remove
  check "remove $b: a new reconcile ran" wait_for 60 settled_after $n0
  n1=$(runs_of_status)
  show "after remove: state $(jq -r .state /tmp/status.json), runs $(jq -c .reconcile.runs /tmp/status.json), reasons $(jq -c .reasons /tmp/status.json)"
  check "remove: trigger is device" eq "$(jq -r .reconcile.last_trigger /tmp/status.json)" device
  check "remove: the daemon no longer sees the drive" eq "$(jq .counts.nvme /tmp/status.json)" 0
  check "remove: journal says why (STEP=monitor DEVICE=$b, removed)" \
    wait_for 10 sh -c "journalctl --no-pager -o json SYSLOG_IDENTIFIER=p2pnode STEP=monitor DEVICE=$b | grep -q 'removed: reconciling'"

  # Rescan: the drive comes back, nvme binds it; another reconcile, and it sees the drive again.
  echo 1 >/sys/bus/pci/rescan
  check "rescan: nvme bound the drive again" wait_for 30 test -e $(dev $b)/nvme
  check "rescan: a new reconcile ran" wait_for 60 settled_after $n1
  n2=$(runs_of_status)
  show "after rescan: state $(jq -r .state /tmp/status.json), runs $(jq -c .reconcile.runs /tmp/status.json), reasons $(jq -c .reasons /tmp/status.json)"
  check "rescan: trigger is device" eq "$(jq -r .reconcile.last_trigger /tmp/status.json)" device
  check "rescan: journal says why (STEP=monitor DEVICE=$b, added)" \
    wait_for 10 sh -c "journalctl --no-pager -o json SYSLOG_IDENTIFIER=p2pnode STEP=monitor DEVICE=$b | grep -q 'added: reconciling'"
  check "rescan: the daemon sees the drive again" eq "$(jq .counts.nvme /tmp/status.json)" 1
  check "rescan: the node is back to its first state and reasons ($s0)" \
    eq "$(jq -r .state /tmp/status.json) $(jq -c .reasons /tmp/status.json)" "$s0 $r0"
  api /metrics >/tmp/metrics.txt
  check "metrics: p2pnode_reconcile_runs_total sums to $n2" \
    eq "$(grep '^p2pnode_reconcile_runs_total' /tmp/metrics.txt | awk '{s += $2} END {print s}')" "$n2"

  # The journal: structured entries through the native protocol, not lines on the stream.
  journal >/tmp/journal.json
  sed 's/^/P2P-OUT /' /tmp/journal.json | head -80
  show "udev monitor saw: $(grep -c . /tmp/udev-monitor.txt) lines"
  sed 's/^/P2P-OUT udev: /' /tmp/udev-monitor.txt | head -30
  check "journal: p2pnode entries" journal_has
  check "journal: all through the native protocol (_TRANSPORT=journal)" \
    eq "$(journal _TRANSPORT=stdout | wc -l)" 0
  check "journal: nothing on the stderr stream" eq "$(journalctl --no-pager -o cat SYSLOG_IDENTIFIER=p2pnode-stderr | wc -l)" 0
  check "journal: every entry has a PRIORITY" eq "$(jq -s 'map(select(.PRIORITY == null)) | length' /tmp/journal.json)" 0
  check "journal: listening logged at notice (PRIORITY=5, STEP=http)" \
    sh -c "journalctl --no-pager -o cat SYSLOG_IDENTIFIER=p2pnode STEP=http PRIORITY=5 | grep -q '^listening on http://127.0.0.1:$PORT'"
  check "journal: reconcile passes logged with STEP=discover, trigger in the message" \
    eq "$(journal STEP=discover | jq -r .MESSAGE | grep -c '^reconcile (device): discovering')" 2
  check "journal: reconcile results logged with STEP=record" eq "$(journal STEP=record | wc -l)" "$n2"
  check "journal: hotplug lines at notice with DEVICE=$b" eq "$(journal STEP=monitor DEVICE=$b PRIORITY=5 | wc -l)" 2
  check "journal: no hotplug line for the non-matching $t" eq "$(journal DEVICE=$t | wc -l)" 0
  check "journal: a finding logged with CHECK= and DEVICE= while the drive was gone" \
    sh -c "journalctl --no-pager -o json SYSLOG_IDENTIFIER=p2pnode STEP=check | jq -e -s 'map(select((.CHECK // \"\") != \"\" and (.DEVICE // \"\") != \"\")) | length > 0'"
  show "empty fields in entries: $(jq -c -s '[.[] | to_entries[] | select(.value == "") | .key] | unique' /tmp/journal.json)"

  kill -TERM $daemon
  check "serve: stops on SIGTERM" wait_for 30 sh -c "! kill -0 $daemon"
  check "journal: stopping logged" wait_for 10 journal_has STEP=signal
  kill $udevmon 2>/dev/null
}
