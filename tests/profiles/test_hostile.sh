#!/bin/bash
# The hostile-profile corpus (tests/profiles/hostile/): each profile carries a value that, written
# as it stands into dkms.conf, modprobe.d, DKMS's framework.conf.d or an argv, would run as root or
# escape its directory. `p2pnode check --profiles <a directory holding only it>` must exit 2 naming
# the field (its "# field:" line), and nothing it carries may run (the canary file stays absent).
# The JSON schema must refuse each as well. Run from the repository root:
#   bash tests/profiles/test_hostile.sh <p2pnode-binary>
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
cd "$(dirname "$0")/../.." || exit 1
bin=${1:-build/daemon/p2pnode}
[ -x "$bin" ] || { echo "FAIL: no p2pnode binary at $bin"; exit 1; }
canary=/tmp/p2pnode-hostile-ran
work=$(temp_dir hostile)
trap 'rm -rf "$work"' EXIT
rm -f "$canary"
for f in tests/profiles/hostile/*.yaml; do
  name=$(basename "$f" .yaml)
  field=$(sed -n 's/^# field: //p' "$f")
  [ -n "$field" ] || { fail "$name" "no '# field:' line"; continue; }
  mkdir -p "$work/$name" && cp "$f" "$work/$name/"
  "$bin" check --root tests/fixtures/tinybox-6x4090 --profiles "$work/$name" >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
  if [ $rc -ne 2 ]; then fail "$name" "check exited $rc, expected 2: $(head -c 300 "$work/$name.err")"; continue; fi
  if ! grep -qF ": $field" "$work/$name.err"; then fail "$name" "the error does not name $field: $(head -c 400 "$work/$name.err")"; continue; fi
  if [ -e "$canary" ]; then fail "$name" "$canary exists: something the profile carries ran"; rm -f "$canary"; continue; fi
  # The error is one line per problem: no raw control character from the profile reaches the output.
  if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$work/$name.err"; then fail "$name" "a control character reached stderr"; continue; fi
  pass "$name: $(grep -F ": $field" "$work/$name.err" | head -1 | sed "s|$work/||")"
done
# The schema mirrors the loader: it refuses every one of them too.
if ! /usr/bin/python3 -c 'import jsonschema, yaml' 2>/dev/null; then
  fail schema "python3-jsonschema and python3-yaml are missing (scripts/install-deps.sh test installs them)"
else
  out=$(/usr/bin/python3 - <<'PY'
import glob, json, re, yaml, jsonschema
class L(yaml.SafeLoader): pass
L.yaml_implicit_resolvers = {k: [(t, r) for t, r in v if t != "tag:yaml.org,2002:bool"] for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
v = jsonschema.Draft202012Validator(json.load(open("api/profile.schema.json")))
for f in sorted(glob.glob("tests/profiles/hostile/*.yaml")):
    doc = yaml.load(open(f), Loader=L)
    print(("refused  " if list(v.iter_errors(doc)) else "ACCEPTED ") + f)
PY
)
  echo "$out"
  n=$(grep -c '^ACCEPTED' <<<"$out")
  if [ "$n" -eq 0 ]; then pass "the schema refuses every hostile profile"; else fail schema "the schema accepts $n hostile profile(s)"; fi
fi
finish
