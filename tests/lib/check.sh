# Sourced by the test scripts: one way to say what held and what did not.
#   pass WHAT     a check that held
#   fail WHAT     a check that did not; counted, and the script goes on to the next
#   die WHAT      a failure after which nothing else can be checked: exits 1 at once
#   finish        the last line of a script: "N passed, M failed", and its status (1 if any failed)
#   wait_until SECONDS COMMAND...   polls COMMAND (every 0.2 s) until it succeeds; 1 if it did not
#                 within SECONDS: a deadline, never a fixed sleep that is too short on a loaded machine
#   temp_dir      a new directory under ${TMPDIR:-/tmp}, its path on stdout (the caller removes it)
PASSES=0
FAILS=0
pass() { echo "ok   $*"; PASSES=$((PASSES + 1)); }
fail() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }
die() { echo "FAIL $*" >&2; exit 1; }
finish() {
  echo "$PASSES passed, $FAILS failed"
  [ "$FAILS" -eq 0 ]
}
wait_until() {
  local limit=$1 start=$SECONDS
  shift
  until "$@"; do
    [ $((SECONDS - start)) -lt "$limit" ] || return 1
    sleep 0.2
  done
}
temp_dir() { mktemp -d "${TMPDIR:-/tmp}/p2pnode-test.XXXXXX"; }
