#!/bin/sh
# An agent that never answers (a GPU stuck after an Xid): the daemon's time limit must kill it.
echo '{"schema_version": 1,' 
exec sleep 600
