# Sourced by the test scripts: one way to say what held and what did not.
#   pass WHAT     a check that held
#   fail WHAT     a check that did not; counted, and the script goes on to the next
#   die WHAT      a failure after which nothing else can be checked: exits 1 at once
#   finish        the last line of a script: "N passed, M failed", and its status (1 if any failed)
#   CHECK_LOG=FILE  pass, fail and finish also append their line to FILE
#   check WHAT COMMAND...   pass WHAT when COMMAND succeeds (its stdout dropped), else fail WHAT
#   wait_until SECONDS COMMAND...   polls COMMAND (every 50 ms, its output dropped) until it succeeds;
#                 1 if it did not within SECONDS: a deadline, never a fixed sleep that is too short on
#                 a loaded machine and too long on an idle one
#   temp_dir NAME a new directory ${TMPDIR:-/tmp}/p2pnode-NAME.XXXXXX, its path on stdout (the caller
#                 removes it)
#   skip WHY      exits 77 (ctest's SKIP_RETURN_CODE) saying why: only for what this machine lacks
#   take_binary PATH  for a script run as `script.sh path/to/build/daemon/p2pnode`: bin (absolute),
#                 REPO (the repository, the working directory from then on) and build (the build tree)
PASSES=0
FAILS=0
pass() { echo "ok   $*" | tee -a "${CHECK_LOG:-/dev/null}"; PASSES=$((PASSES + 1)); }
fail() { echo "FAIL $*" | tee -a "${CHECK_LOG:-/dev/null}"; FAILS=$((FAILS + 1)); }
die() { echo "FAIL $*" >&2; exit 1; }
finish() {
  echo "$PASSES passed, $FAILS failed" | tee -a "${CHECK_LOG:-/dev/null}"
  [ "$FAILS" -eq 0 ]
}
check() {
  local what=$1
  shift
  if "$@" >/dev/null; then pass "$what"; else fail "$what"; fi
}
wait_until() {
  local deadline=$(($(date +%s%N) + $1 * 1000000000))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s%N)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}
temp_dir() { mktemp -d "${TMPDIR:-/tmp}/p2pnode-${1:-test}.XXXXXX"; }
skip() { echo "SKIP: $*"; exit 77; }
take_binary() {
  bin=${1:?usage: $(basename "$0") path/to/build/daemon/p2pnode}
  bin=$(readlink -f "$bin")
  cd "$(dirname "${BASH_SOURCE[1]}")/../.." || die "cannot enter the repository"
  REPO=$PWD
  build=$(cd "$(dirname "$bin")/.." && pwd)
}
