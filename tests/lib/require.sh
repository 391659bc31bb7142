# Sourced by the test scripts. require PROGRAM...: each program must be on PATH. They are what
# `make test` installs first (scripts/install-deps.sh test) or what a minimal Debian has, so a
# missing one is a failure that names it, never a skip: ctest's summary then means what it says.
# (tests/deps/test_programs_installed.sh checks that install-deps.sh installs every one.)
require() {
  local p
  for p in "$@"; do
    command -v "$p" >/dev/null 2>&1 && continue
    echo "FAIL: $p is not installed: scripts/install-deps.sh test installs it (make test runs it first)" >&2
    exit 1
  done
}
