#!/bin/sh
# An agent whose document contradicts itself: "passed" with an exit code of 1.
[ "$1" = "--json" ] && shift
cat "$1"
exit 1
