#!/bin/bash
# ctest entry (tests/CMakeLists.txt runs tests/*/test_*.sh with the p2pnode binary as $1, unused here):
# the recorder round trip over every fixture.
exec bash "$(dirname -- "${BASH_SOURCE[0]}")/roundtrip.sh"
