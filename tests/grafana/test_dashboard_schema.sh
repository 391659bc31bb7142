#!/bin/bash
# Every dashboard in grafana/ against Grafana's published dashboard schema: the TypeScript types of
# npm's @grafana/schema (10.4, the Grafana of schemaVersion 39). Each JSON file becomes the value of
# a constant typed Dashboard and `tsc --noEmit --strict` checks it: unknown keys (excess
# properties), wrong types, enum values Grafana does not know (a colour mode, a thresholds mode, a
# variable type). String enums are compared by their values (JSON cannot name a TypeScript enum).
# The packages go to a cache outside the repository (P2PNODE_NPM_CACHE, default
# /var/cache/p2pnode-tests/npm), once, under the lock of tests/lib/npm.sh. Costs ~3 s once installed;
# exit 77 without node and npm, a failure when npm cannot install the packages.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${P2PNODE_NPM_CACHE:-/var/cache/p2pnode-tests/npm}
require node npm
source "$SRC/tests/lib/npm.sh"
npm_packages "$CACHE" .bin/tsc @grafana/schema/dist/index.d.ts -- @grafana/schema@10.4 typescript@5 ||
  { echo "FAIL: npm could not install @grafana/schema@10.4 and typescript@5 into $CACHE"; exit 1; }
WORK=$(mktemp -d /tmp/p2pnode-dash-schema.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/loose.ts" <<'TS'
// A string enum's values as a union of literals, everywhere inside T (JSON holds the values).
export type Loose<T> = T extends string ? `${T}` : T extends Array<infer U> ? Array<Loose<U>> : T extends object ? { [K in keyof T]: Loose<T[K]> } : T;
TS
files=()
for f in "$SRC"/grafana/*.json; do
  n=$(basename "$f" .json)
  { echo "import type { Dashboard } from '@grafana/schema';"
    echo "import type { Loose } from './loose';"
    echo "export const dashboard: Loose<Dashboard> ="
    cat "$f"
    echo ";"; } > "$WORK/$n.ts"
  files+=("\"$n.ts\"")
done
cat > "$WORK/tsconfig.json" <<J
{"compilerOptions": {"strict": true, "noEmit": true, "module": "commonjs", "moduleResolution": "node", "target": "es2020",
  "skipLibCheck": true, "types": [], "baseUrl": "$CACHE/node_modules"},
 "files": [$(IFS=,; echo "${files[*]}")]}
J
if (cd "$WORK" && "$CACHE/node_modules/.bin/tsc" -p tsconfig.json) > "$WORK/tsc.out" 2>&1; then
  echo "ok   ${#files[@]} dashboard(s) match @grafana/schema $(node -p "require('$CACHE/node_modules/@grafana/schema/package.json').version")'s Dashboard"
  exit 0
fi
# Line numbers in the wrapper are the JSON file's plus 3.
python3 -c '
import re, sys
for line in open(sys.argv[1]):
    print("FAIL " + re.sub(r"^(\S+)\.ts\((\d+),(\d+)\)", lambda m: "grafana/%s.json:%d:%s" % (m[1], int(m[2]) - 3, m[3]), line.rstrip()))
' "$WORK/tsc.out"
exit 1
