#!/bin/sh
# A stand-in for p2pnode-agent: prints a recorded result. usage: replay.sh --json FILE [EXIT [DELAY_S]]
# With --health it prints the document beside the path it was run as ($0.health.json, which
# tests/serve/eight_gpu_node.sh writes for the recorded machines), or fails as an agent without
# NVML access would.
if [ "$1" = "--health" ]; then
  [ -r "$0.health.json" ] || { echo "replay.sh: no health document at $0.health.json" >&2; exit 3; }
  exec cat "$0.health.json"
fi
[ "$1" = "--json" ] && shift
[ -n "$3" ] && sleep "$3"
cat "$1"
exit "${2:-0}"
