#!/bin/sh
# A stand-in for p2pnode-agent that also answers --health: with --health it prints the document in
# $P2PNODE_TEST_HEALTH_DOC (test_health.sh rewrites it between passes); anything else is replay.sh's.
if [ "$1" = "--health" ]; then
  [ -n "$P2PNODE_TEST_HEALTH_DOC" ] && [ -r "$P2PNODE_TEST_HEALTH_DOC" ] || { echo "no P2PNODE_TEST_HEALTH_DOC" >&2; exit 3; }
  cat "$P2PNODE_TEST_HEALTH_DOC"
  exit 0
fi
exec "$(dirname "$(readlink -f "$0")")/replay.sh" "$@"
