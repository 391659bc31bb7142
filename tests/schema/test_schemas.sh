#!/bin/bash
# Validates the bundled profiles against api/profile.schema.json and `p2pnode check --json` on every
# fixture against api/check-report.schema.json. Run from the repository root:
#   bash tests/schema/test_schemas.sh <p2pnode-binary>
# Needs Debian's python3-jsonschema and python3-yaml (scripts/install-deps.sh test); exits 77 when
# they or the binary are missing. The last line is "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
bin=${1:-build/daemon/p2pnode}
py=/usr/bin/python3
if [ ! -x "$py" ] || ! "$py" -c 'import jsonschema, yaml' 2>/dev/null; then
  echo "FAIL: $py with jsonschema and yaml is missing (python3-jsonschema, python3-yaml: scripts/install-deps.sh test)"
  exit 1
fi
if [ ! -x "$bin" ]; then
  echo "SKIP: no p2pnode binary at $bin (pass the built binary as the first argument)"
  exit 77
fi

work=$(mktemp -d /tmp/p2pnode-schema.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Run check --json on each fixture; the exit status (0 pass, 1 findings with errors) is not what
# is tested here, but 2 (bad usage or profile) or a crash is.
failed_runs=0
for dir in tests/fixtures/*/; do
  fx=$(basename "$dir")
  [ -f "$dir/FIXTURE.md" ] || continue
  "$bin" check --json --root "$dir" --profiles profiles >"$work/$fx.json" 2>"$work/$fx.err"
  rc=$?
  if [ $rc -eq 2 ] && grep -q "profile" "$work/$fx.err"; then
    # No bundled profile matches this fixture: judge it against the two-GPU test profile.
    "$bin" check --json --root "$dir" --profile tests/profiles/two-4090.yaml >"$work/$fx.json" 2>"$work/$fx.err"
    rc=$?
  fi
  if [ $rc -gt 1 ]; then
    echo "FAIL check-report $fx: p2pnode check exited $rc: $(head -c 400 "$work/$fx.err")"
    failed_runs=$((failed_runs + 1))
    rm -f "$work/$fx.json"
  fi
done

"$py" - "$work" "$failed_runs" <<'PY'
import glob, json, os, re, sys
import jsonschema, yaml

work, failed = sys.argv[1], int(sys.argv[2])
passed = 0

# YAML 1.2 booleans (true/false only), as editors and yaml-cpp read them; PyYAML's YAML 1.1 would
# turn `iommu: off` into False.
class Yaml12Loader(yaml.SafeLoader):
    pass
Yaml12Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))

def validator(path):
    with open(path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())

def report(kind, name, errors):
    global passed, failed
    if errors:
        failed += 1
        for e in errors[:5]:
            where = "/".join(str(p) for p in e.absolute_path) or "(root)"
            print(f"FAIL {kind} {name}: {where}: {e.message[:300]}")
    else:
        passed += 1
        print(f"ok   {kind} {name}")

profile_v = validator("api/profile.schema.json")
for path in sorted(glob.glob("profiles/*.yaml") + glob.glob("tests/profiles/*.yaml")):
    try:
        with open(path) as f:
            doc = yaml.load(f, Loader=Yaml12Loader)
    except yaml.YAMLError as e:
        report("profile", path, [jsonschema.ValidationError(f"not YAML: {e}")])
        continue
    report("profile", path, list(profile_v.iter_errors(doc)))

# The schema's builtin patches are the ones p2pnode ships (daemon/nvidia/patches/<name>.patch).
with open("api/profile.schema.json") as f:
    km = json.load(f)["properties"]["driver"]["properties"]["kernel_module"]["properties"]
listed = sorted(next(a for a in km["patches"]["items"]["anyOf"] if "builtin" in a.get("properties", {}))["properties"]["builtin"]["enum"])
shipped = sorted(os.path.basename(p)[:-6] for p in glob.glob("daemon/nvidia/patches/*.patch"))
report("schema", "builtin patches", [] if listed == shipped else
       [jsonschema.ValidationError(f"the schema lists {listed}, daemon/nvidia/patches has {shipped}")])

report_v = validator("api/check-report.schema.json")
for path in sorted(glob.glob(os.path.join(work, "*.json"))):
    name = os.path.basename(path)[:-5]
    try:
        with open(path) as f:
            doc = json.load(f)
    except ValueError as e:
        report("check-report", name, [jsonschema.ValidationError(f"not JSON: {e}")])
        continue
    report("check-report", name, list(report_v.iter_errors(doc)))

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
