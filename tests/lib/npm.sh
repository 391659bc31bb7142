# Sourced by the tests that run npm packages (the OpenAPI validator, Grafana's dashboard schema):
# installs them once into a directory outside the repository. Several tests start at once under
# `ctest -j`, so the install runs under one lock for every npm cache here (npm's own ~/.npm
# included): the second test waits for the first and then finds the packages in place.
P2PNODE_TEST_CACHE=${P2PNODE_TEST_CACHE:-/var/cache/p2pnode-tests}

# npm_packages DIR MARKER... -- PACKAGE...: DIR/node_modules holds every MARKER (a path under
# node_modules) afterwards, or the function prints npm's own error and returns 1.
npm_packages() {
  local dir=$1; shift
  local markers=() m
  while [ $# -gt 0 ] && [ "$1" != -- ]; do markers+=("$1"); shift; done
  shift
  command -v npm >/dev/null || { echo "npm is not installed" >&2; return 1; }
  mkdir -p "$P2PNODE_TEST_CACHE" "$dir"
  (
    flock 9 || exit 1
    for m in "${markers[@]}"; do [ -e "$dir/node_modules/$m" ] || break; done
    [ -e "$dir/node_modules/$m" ] && exit 0
    [ -f "$dir/package.json" ] || echo '{"name":"p2pnode-test-packages","private":true}' > "$dir/package.json"
    (cd "$dir" && timeout 300 npm install --no-audit --no-fund --silent "$@") > "$dir/.install.log" 2>&1 ||
      { echo "npm install $* in $dir failed:" >&2; tail -20 "$dir/.install.log" >&2; exit 1; }
    for m in "${markers[@]}"; do
      [ -e "$dir/node_modules/$m" ] || { echo "npm install $* left no $dir/node_modules/$m" >&2; exit 1; }
    done
  ) 9>"$P2PNODE_TEST_CACHE/.npm.lock"
}
