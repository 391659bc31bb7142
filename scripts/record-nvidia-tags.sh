#!/bin/bash
# Records, for every claim of daemon/nvidia/breakages.yaml whose source is an NVIDIA tag
# ({release: X, tag: …} under affected or fixed_in), the entry's source-test file at that tag into
# tests/fixtures/nvidia-tags.tar.xz (<release>/<path>), so that a unit test holds each claim against
# the tag's own text without a clone (Breakages.EveryTagClaimHoldsOnTheTagsOwnSource).
#   usage: scripts/record-nvidia-tags.sh <git dir of a clone of NVIDIA/open-gpu-kernel-modules>
# Run it after adding a tag claim; the archive is reproducible (sorted, fixed owner and time).
set -euo pipefail
git_dir=$(readlink -f "$1")
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work/pairs" <<'PY'
import sys, yaml
table = yaml.safe_load(open("daemon/nvidia/breakages.yaml"))["breakages"]
pairs = set()
for b in table:
    for claim in b.get("affected", []) + b.get("fixed_in", []):
        if isinstance(claim, dict) and "tag" in claim:
            if "source" not in b:
                sys.exit(f"{b['id']}: a tag claim ({claim['release']}) needs the entry's source test")
            pairs.add((claim["release"], b["source"]["file"]))
with open(sys.argv[1], "w") as f:
    for release, path in sorted(pairs):
        f.write(f"{release} {path}\n")
PY
n=0
while read -r release path; do
  mkdir -p "$work/tags/$release/$(dirname "$path")"
  if ! git --git-dir="$git_dir" show "$release:$path" > "$work/tags/$release/$path"; then
    echo "record-nvidia-tags: $release:$path is not in $git_dir" >&2
    exit 1
  fi
  n=$((n + 1))
done < "$work/pairs"
tar -C "$work/tags" --sort=name --owner=0 --group=0 --numeric-owner --mtime=2026-01-01 -cf - . |
  xz -9e > tests/fixtures/nvidia-tags.tar.xz
echo "record-nvidia-tags: $n files of $(cut -d' ' -f1 "$work/pairs" | sort -u | wc -l) tags in tests/fixtures/nvidia-tags.tar.xz ($(stat -c %s tests/fixtures/nvidia-tags.tar.xz) bytes)"
