#!/bin/bash
# The regression alert (prometheus/p2pnode-alerts.yml, P2pnodePairRegressed) through promtool:
# the rules file is valid and the alert fires for a regressed pair, once per pair, not before.
# Usage: bash tests/prometheus/test_regressed_alert.sh [path/to/p2pnode]   (exit 77: no promtool)
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
require promtool
promtool check rules "$SRC/prometheus/p2pnode-alerts.yml"
cd "$SRC/prometheus/tests" && promtool test rules p2pnode-regressed.test.yml
