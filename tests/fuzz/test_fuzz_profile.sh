#!/bin/bash
# Fuzzes the profile loader with libFuzzer for a bounded time (default 60 s).
# Usage: bash tests/fuzz/test_fuzz_profile.sh <p2pnode-binary>   (its build directory holds the
#   generated daemon/embedded_data.cpp: the builtin patch names the loader checks come from it)
# Env: P2PNODE_FUZZ_SECONDS (default 30; make test runs the default), P2PNODE_FUZZ_DIR (work dir, default a temp dir).
# Exit: 0 no crash; 1 a crash (the reproducer is printed and kept); 77 clang++ or libFuzzer missing.
set -uo pipefail
bin=${1:+$(readlink -f "$1")}
cd "$(dirname "$0")/../.." || exit 1
seconds=${P2PNODE_FUZZ_SECONDS:-30}
cxx=$(command -v clang++ || true)
if [ -z "$cxx" ]; then
  echo "FAIL: clang++ is not installed (clang, libclang-rt-dev: scripts/install-deps.sh test)"
  exit 1
fi
work=${P2PNODE_FUZZ_DIR:-$(mktemp -d /tmp/p2pnode-fuzz.XXXXXX)}
mkdir -p "$work/corpus" "$work/artifacts"

# Does this clang have libFuzzer (libclang-rt-dev)?
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' > "$work/probe.cpp"
if ! "$cxx" -fsanitize=fuzzer "$work/probe.cpp" -o "$work/probe" 2>"$work/probe.log"; then
  echo "FAIL: $cxx cannot link -fsanitize=fuzzer (libclang-rt-dev: scripts/install-deps.sh test): $(head -1 "$work/probe.log")"
  exit 1
fi

srcs=(tests/fuzz/profile_fuzz.cpp daemon/profile/loader.cpp daemon/profile/yaml_reader.cpp
      daemon/profile/input_rules.cpp daemon/core/grammar.cpp
      daemon/core/units.cpp daemon/core/profile.cpp daemon/nvidia/breakage.cpp)
embedded=${bin:+$(dirname "$bin")/embedded_data.cpp}
if [ -z "$embedded" ] || [ ! -f "$embedded" ]; then
  echo "FAIL: no generated embedded_data.cpp beside '${1:-}' (pass the built p2pnode, e.g. build/daemon/p2pnode)"
  exit 1
fi
srcs+=("$embedded")
echo "fuzz: building with $cxx"
if ! "$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
     -fno-sanitize-recover=undefined -I daemon "${srcs[@]}" -lyaml-cpp -o "$work/profile_fuzz" \
     2>"$work/build.log"; then
  cat "$work/build.log"
  echo "FAIL: the fuzz target did not build"
  exit 1
fi

# Seed corpus: the bundled profiles and the bad corpus.
cp profiles/*.yaml tests/profiles/*.yaml "$work/corpus/" 2>/dev/null
for f in tests/profiles/bad/*.yaml; do cp "$f" "$work/corpus/bad-$(basename "$f")"; done

echo "fuzz: running for ${seconds}s on $(ls "$work/corpus" | wc -l) seeds"
# -rss_limit_mb: a profile never needs more; -timeout: one input never takes seconds.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  "$work/profile_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/fuzz.log" 2>&1
rc=$?
tail -n 20 "$work/fuzz.log"
if [ $rc -ne 0 ] || ls "$work/artifacts/" | grep -q .; then
  echo "FAIL: the fuzzer found a problem (exit $rc); reproducers in $work/artifacts:"
  ls -l "$work/artifacts/"
  exit 1
fi
[ -z "${P2PNODE_FUZZ_DIR:-}" ] && rm -rf "$work"
echo "fuzz: no crash in ${seconds}s"
exit 0
