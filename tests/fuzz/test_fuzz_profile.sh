#!/bin/bash
# Fuzzes what p2pnode reads from files with libFuzzer under ASan and UBSan, for a bounded time: the
# profile loader (default 30 s), the daemon's configuration and the kernel-log parsers (10 s each).
# Usage: bash tests/fuzz/test_fuzz_profile.sh <p2pnode-binary>   (its build directory holds the
#   generated daemon/embedded_data.cpp: the builtin patch names the loader checks come from it)
# Env: P2PNODE_FUZZ_SECONDS (the profile target; default 30: make test runs the default; the other
#   two get a third of it, at least 5 s), P2PNODE_FUZZ_DIR (work dir, default a temp dir).
# Seeds: the bundled profiles, every bad and hostile profile of the tree (the alias cycle and bomb
# among them), the daemon configurations of the tests, and recorded kernel logs.
# Exit: 0 no crash, hang or sanitizer report; 1 otherwise (the reproducer is printed and kept).
set -uo pipefail
bin=${1:+$(readlink -f "$1")}
cd "$(dirname "$0")/../.." || exit 1
seconds=${P2PNODE_FUZZ_SECONDS:-30}
small=$((seconds / 3 < 5 ? 5 : seconds / 3))
cxx=$(command -v clang++ || true)
if [ -z "$cxx" ]; then
  echo "FAIL: clang++ is not installed (clang, libclang-rt-dev: scripts/install-deps.sh test)"
  exit 1
fi
work=${P2PNODE_FUZZ_DIR:-$(mktemp -d /tmp/p2pnode-fuzz.XXXXXX)}
mkdir -p "$work/obj" "$work/artifacts"

# Does this clang have libFuzzer (libclang-rt-dev)?
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' > "$work/probe.cpp"
if ! "$cxx" -fsanitize=fuzzer "$work/probe.cpp" -o "$work/probe" 2>"$work/probe.log"; then
  echo "FAIL: $cxx cannot link -fsanitize=fuzzer (libclang-rt-dev: scripts/install-deps.sh test): $(head -1 "$work/probe.log")"
  exit 1
fi
embedded=${bin:+$(dirname "$bin")/embedded_data.cpp}
if [ -z "$embedded" ] || [ ! -f "$embedded" ]; then
  echo "FAIL: no generated embedded_data.cpp beside '${1:-}' (pass the built p2pnode, e.g. build/daemon/p2pnode)"
  exit 1
fi

# Each source is compiled once (two at a time) and linked into the targets that need it: the
# sources a target's includes lead to (tests/fuzz/sources.py), so a file split in two stays linked.
sources() { mapfile -t "$1" < <(python3 tests/fuzz/sources.py --embedded "$embedded" "tests/fuzz/$2.cpp"); }
sources profile profile_fuzz
sources config config_fuzz
sources kmsg kernel_log_fuzz
if [ ${#profile[@]} -lt 2 ] || [ ${#config[@]} -lt 2 ] || [ ${#kmsg[@]} -lt 2 ]; then
  echo "FAIL: tests/fuzz/sources.py found no daemon source for a target (${#profile[@]}, ${#config[@]}, ${#kmsg[@]})"
  exit 1
fi
obj() { printf '%s/obj/%s.o' "$work" "$(printf %s "$1" | tr '/' '_')"; }
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I daemon)
echo "fuzz: building with $cxx"
export cxx work
export FLAGS="${flags[*]}"
if ! printf '%s\n' "${profile[@]}" "${config[@]}" "${kmsg[@]}" | sort -u |
     xargs -P 2 -I{} bash -c 'o="$work/obj/$(printf %s "{}" | tr / _).o"; $cxx $FLAGS -c "{}" -o "$o" 2>"$o.log" || { cat "$o.log"; exit 255; }'; then
  echo "FAIL: the fuzz targets did not compile"
  exit 1
fi
link() {  # name, libraries, sources...
  local name=$1 libs=$2 objs=() s
  shift 2
  for s in "$@"; do objs+=("$(obj "$s")"); done
  if ! "$cxx" -fsanitize=fuzzer,address,undefined "${objs[@]}" $libs -o "$work/$name" 2>"$work/$name.link.log"; then
    cat "$work/$name.link.log"
    echo "FAIL: the fuzz target $name did not link"
    exit 1
  fi
}
link profile_fuzz "-lyaml-cpp" "${profile[@]}"
link config_fuzz "-lyaml-cpp -lssl -lcrypto" "${config[@]}"
link kernel_log_fuzz "" "${kmsg[@]}"

# Seed corpora.
mkdir -p "$work/corpus-profile" "$work/corpus-config" "$work/corpus-kmsg"
cp profiles/*.yaml tests/profiles/*.yaml "$work/corpus-profile/" 2>/dev/null
for d in bad hostile; do
  for f in tests/profiles/$d/*.yaml; do cp "$f" "$work/corpus-profile/$d-$(basename "$f")"; done
done
cp "$work"/corpus-profile/bad-*.yaml "$work/corpus-config/"
cp systemd/p2pnode.yaml "$work/corpus-config/shipped.yaml"
for f in tests/vm/guest/*/p2pnode.yaml; do cp "$f" "$work/corpus-config/$(basename "$(dirname "$f")").yaml"; done
printf 'listen: 127.0.0.1:9470\ntoken_file: /etc/p2pnode/token\nprofiles_dir: /etc/p2pnode/profiles\n' > "$work/corpus-config/seed.yaml"
n=0
for f in tests/serve/data/kmsg-*.txt $(find tests/fixtures -name kmsg -o -name 'dmesg*' 2>/dev/null | head -40); do
  [ -f "$f" ] && head -c 65536 "$f" > "$work/corpus-kmsg/$n" && n=$((n + 1))
done
grep -rhoE '"[0-9],[0-9]+,[0-9]+,-;[^"]*"' tests/unit/health 2>/dev/null | sed 's/^"//; s/"$//' | head -200 |
  while IFS= read -r l; do printf '%b\n' "$l" > "$work/corpus-kmsg/u$((n++))"; done

status=0
run() {  # name, seconds, dictionary, corpus
  local name=$1 secs=$2 dict=$3 corpus=$4
  echo "fuzz: $name for ${secs}s on $(ls "$corpus" | wc -l) seeds"
  # -rss_limit_mb: one input never needs more; -timeout: one input never takes seconds.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$work/$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -dict="$dict" \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$name-" "$corpus" >"$work/$name.log" 2>&1
  local rc=$?
  tail -n 8 "$work/$name.log"
  if [ $rc -ne 0 ] || ls "$work/artifacts/" | grep -q "^$name-"; then
    echo "FAIL: the $name fuzzer found a problem (exit $rc); reproducers in $work/artifacts:"
    ls -l "$work/artifacts/"
    status=1
  fi
}
run profile_fuzz "$seconds" tests/fuzz/yaml.dict "$work/corpus-profile"
run config_fuzz "$small" tests/fuzz/yaml.dict "$work/corpus-config"
run kernel_log_fuzz "$small" tests/fuzz/kmsg.dict "$work/corpus-kmsg"
[ $status -eq 0 ] && [ -z "${P2PNODE_FUZZ_DIR:-}" ] && rm -rf "$work"
[ $status -eq 0 ] && echo "fuzz: no crash, hang or sanitizer report"
exit $status
