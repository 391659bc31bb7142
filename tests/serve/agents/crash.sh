#!/bin/sh
# An agent that dies from a signal half-way through its output.
printf '{"schema_version": 1, "agent": {"name": "p2pnode-agent"'
echo "CUDA error: an illegal memory access was encountered" >&2
kill -SEGV $$
