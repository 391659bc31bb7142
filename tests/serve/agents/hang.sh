#!/bin/sh
# An agent that never answers (a GPU stuck after an Xid): the daemon's time limit must kill it.
# As the daemon runs it (--json, then the configuration's arguments) its first argument is how long
# it sleeps: a test gives a number of its own (600.PID), so that it finds its own sleep and not
# another test's. Otherwise (--processes, --health, no argument) 600 s.
echo '{"schema_version": 1,' 
[ "$1" = "--json" ] && shift
case "$1" in '' | -*) set -- 600 ;; esac
exec sleep "$1"
