#!/bin/sh
# A stand-in for p2pnode-agent that knows nvme_doorbell: usage (argv as the daemon builds it)
#   doorbell.sh --json RESULT DOORBELL ARGS_LOG [the daemon's arguments…]
# Appends the daemon's arguments to ARGS_LOG; prints DOORBELL when they ask for nvme_doorbell,
# RESULT otherwise, and exits with the printed document's exit_code.
[ "$1" = "--json" ] && shift
result=$1 doorbell=$2 log=$3
shift 3
echo "$*" >>"$log"
doc=$result
case " $* " in *" nvme_doorbell "*) doc=$doorbell ;; esac
cat "$doc"
exit "$(jq -r .exit_code "$doc")"
