#!/bin/sh
# A stand-in for p2pnode-agent: prints a recorded result. usage: replay.sh --json FILE [EXIT [DELAY_S]]
[ "$1" = "--json" ] && shift
[ -n "$3" ] && sleep "$3"
cat "$1"
exit "${2:-0}"
