#!/bin/bash
# Benchmark (not a timed test): `p2pnode check` on the 8-GPU, 4-NVMe fixture. Wall time (median of
# 50 runs, hyperfine when apt has it, else a date +%s%N loop) and peak RSS (/usr/bin/time -f %M).
# Usage: scripts/bench-check.sh [p2pnode-binary]   (from anywhere; default build/daemon/p2pnode)
# Aim (issues 2 and 3): under 20 ms and 15 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/daemon/p2pnode}")
fixture=tests/fixtures/epyc-8x4090-4nvme
runs=${P2PNODE_BENCH_RUNS:-50}
[ -x "$bin" ] || { echo "bench-check: no p2pnode binary at $bin; build first (make, or cmake --build build)" >&2; exit 2; }

apt_install() {  # installs a Debian package when we may; says so when we may not
  command -v "$2" >/dev/null && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "bench-check: installing $1" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$1" >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$1" >/dev/null 2>&1; } || true
  fi
  command -v "$2" >/dev/null
}
have_hyperfine=0; apt_install hyperfine hyperfine && have_hyperfine=1
have_time=0; apt_install time /usr/bin/time && [ -x /usr/bin/time ] && have_time=1

tmp=$(mktemp -d /tmp/p2pnode-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Each mode: name, then the argv after the binary.
modes=("table|check --root $fixture --profiles profiles"
       "json|check --json --root $fixture --profiles profiles")

"$bin" check --root $fixture --profiles profiles >/dev/null 2>&1 && rc=0 || rc=$?
[ $rc -le 1 ] || { echo "bench-check: p2pnode check failed (exit $rc) on $fixture" >&2; exit 1; }

median_loop() {  # median wall time in ms of $runs runs, without hyperfine
  local -a t=()
  for _ in $(seq 5); do "$bin" "$@" >/dev/null 2>&1 || true; done  # warm the page cache
  for _ in $(seq "$runs"); do
    local s e
    s=$(date +%s%N); "$bin" "$@" >/dev/null 2>&1 || true; e=$(date +%s%N)
    t+=($(( (e - s) / 1000 )))
  done
  printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.2f %.2f %.2f\n", m/1000, a[1]/1000, a[NR]/1000}'
}

median_hyperfine() {
  local shell_opt=()
  hyperfine --help 2>/dev/null | grep -q -- '--shell' && hyperfine -N --help >/dev/null 2>&1 && shell_opt=(-N)
  hyperfine "${shell_opt[@]}" --warmup 5 --runs "$runs" -i --export-json "$tmp/h.json" --style none \
    "$bin $*" >/dev/null 2>&1
  /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.2f %.2f %.2f %.2f" % (r["median"]*1e3, r["min"]*1e3, r["max"]*1e3, (r["user"]+r["system"])*1e3))' "$tmp/h.json"
}

rss_and_cpu() {  # over 10 runs: the highest peak RSS in MB (MiB) and the median user+sys CPU in ms
  local max=0 kb cpus=()
  for _ in $(seq 10); do
    /usr/bin/time -f '%M %U %S' -o "$tmp/rss" "$bin" "$@" >/dev/null 2>&1 || true
    read -r kb u s < <(tail -1 "$tmp/rss")
    [ "$kb" -gt "$max" ] && max=$kb
    cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%.0f", (u + s) * 1000}')")
  done
  printf '%s\n' "${cpus[@]}" | sort -n | awk -v k="$max" '{a[NR]=$1} END {printf "%.1f %s\n", k/1024, a[int((NR+1)/2)]}'
}

tool=$([ $have_hyperfine = 1 ] && echo "hyperfine" || echo "date +%s%N loop")
echo "p2pnode check on $fixture: $(ls $fixture/sys/bus/pci/devices | wc -l) PCI functions, $runs runs ($tool)"
echo "binary: $bin"
echo "host: $(nproc) CPU(s), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '%-8s %12s %10s %10s %14s %14s\n' output "median (ms)" "min (ms)" "max (ms)" "CPU (ms)" "peak RSS (MB)"
for m in "${modes[@]}"; do
  name=${m%%|*}; read -r -a args <<<"${m#*|}"
  hcpu=""
  if [ $have_hyperfine = 1 ]; then read -r med mn mx hcpu < <(median_hyperfine "${args[@]}")
  else read -r med mn mx < <(median_loop "${args[@]}"); fi
  rss=n/a cpu=n/a
  [ $have_time = 1 ] && read -r rss cpu < <(rss_and_cpu "${args[@]}")
  [ -n "$hcpu" ] && cpu=$hcpu  # hyperfine's mean user+sys: finer than time's 10 ms
  printf '%-8s %12s %10s %10s %14s %14s\n' "$name" "$med" "$mn" "$mx" "$cpu" "$rss"
done
echo
echo "aim: median under 20 ms, peak RSS under 15 MB. CPU is user+sys per run (hyperfine's mean, else"
echo "the median of 10 by /usr/bin/time at 10 ms resolution);"
echo "on a loaded host it is the steadier figure, wall time the one the aim is about."
