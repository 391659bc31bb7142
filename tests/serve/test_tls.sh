#!/bin/bash
# `p2pnode serve` over HTTPS (tls: in p2pnode.yaml) on the recorded 4x H200 node: a self-signed
# certificate made with the openssl CLI; curl --cacert on the endpoints, plain HTTP refused,
# promtool on /metrics, the token, `p2pnode status` trusting the configured certificate, idle and
# stalled handshakes that cannot starve the workers, SIGHUP with broken TLS files (the old
# certificate keeps serving, the reason is logged) and with a new certificate (served at once).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_tls.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require curl jq python3
require openssl

# make_cert DIR NAME CN: DIR/NAME.crt and DIR/NAME.key (0600), self-signed, naming 127.0.0.1.
make_cert() {
  mkdir -p "$1"
  (umask 077; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$3" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$1/$2.key" -out "$1/$2.crt" 2>/dev/null)
  chmod 644 "$1/$2.crt"
}
# fingerprint: the SHA-256 fingerprint of the certificate the daemon serves now.
served_fingerprint() {
  openssl s_client -connect "127.0.0.1:$PORT" -servername localhost </dev/null 2>/dev/null |
    openssl x509 -noout -fingerprint -sha256 2>/dev/null
}
file_fingerprint() { openssl x509 -in "$1" -noout -fingerprint -sha256; }

RESULT="$SRC/tests/fixtures/gpu-runs/h200x4-rounds.json"
make_node h200 h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
ROOT="$WORK/h200/root"
TLS="$ROOT/etc/p2pnode/tls"
make_cert "$TLS" server p2pnode-test
cp -p "$TLS/server.crt" "$TLS/cert.pem"; cp -p "$TLS/server.key" "$TLS/key.pem"
write_config h200 "$SRC/tests/serve/agents/replay.sh" "[\"$RESULT\", \"0\", \"0.5\"]" \
  "tls:
  cert_file: /etc/p2pnode/tls/cert.pem
  key_file: /etc/p2pnode/tls/key.pem"
KEY_LINE=$(grep -n 'key_file:' "$WORK/h200/p2pnode.yaml" | cut -d: -f1)
SCHEME=https
CURL_TLS=(--cacert "$TLS/cert.pem")
start_daemon h200 || exit 1
CURL=(curl -s "${CURL_TLS[@]}")

# --- HTTPS with the configured certificate as the CA ---
record livez GET /livez
check "GET /livez over https is 200" test "$STATUS" = 200
record status GET /v1/status
check "GET /v1/status over https is 200" test "$STATUS" = 200
check "status names the profile" test "$(jq -r .profile <<<"$BODY")" = h200-nvlink
STATE=$(jq -r .state <<<"$BODY")
for ep in findings:/v1/findings devices:/v1/devices topology:/v1/topology plan:/v1/plan selftest:/v1/selftest health:/v1/health; do
  record "${ep%%:*}" GET "${ep#*:}"
  check "GET ${ep#*:} over https is 200" test "$STATUS" = 200
done
record readyz GET /readyz
if [ "$STATE" = ready ]; then check "GET /readyz is 200 when ready" test "$STATUS" = 200
else check "GET /readyz is 503 when $STATE" test "$STATUS" = 503; fi
grep -q "listening on https://127.0.0.1:$PORT" "$WORK/h200/log" && pass "the log says https" || fail "the log says https"
grep -q "TLS certificate: subject .*CN *= *p2pnode-test" "$WORK/h200/log" && pass "the log names the certificate" ||
  fail "the log names the certificate"
check "TLS 1.2 is accepted" "${CURL[@]}" -f --tlsv1.2 --tls-max 1.2 "$URL/livez" -o /dev/null
check "TLS 1.3 is accepted" "${CURL[@]}" -f --tlsv1.3 "$URL/livez" -o /dev/null
PROTO=$(openssl s_client -connect "127.0.0.1:$PORT" -tls1_2 </dev/null 2>/dev/null | sed -n 's/^ *Cipher *: *//p' | head -1)
check "TLS 1.2 gets a forward-secret AEAD cipher ($PROTO)" grep -Eq '^ECDHE-(ECDSA|RSA)-(AES(128|256)-GCM|CHACHA20)' <<<"$PROTO"

# --- what must not work ---
curl -s -m 5 "http://127.0.0.1:$PORT/livez" -o /dev/null; RC=$?
check "plain HTTP to the TLS port fails (curl exit $RC)" test "$RC" -ne 0
curl -s -m 5 "https://127.0.0.1:$PORT/livez" -o /dev/null; RC=$?
check "https without the CA fails verification (curl exit $RC)" test "$RC" = 60
check "still serving after the plain-HTTP attempt" "${CURL[@]}" -f "$URL/livez" -o /dev/null

# --- /metrics ---
record metrics GET /metrics
check "GET /metrics over https is 200" test "$STATUS" = 200
check "metrics have pair bandwidth" grep -q '^p2pnode_p2p_bandwidth_bytes_per_second{' "$RESP/metrics.body"
if require promtool; then
  check "promtool check metrics passes" bash -c "promtool check metrics < '$RESP/metrics.body'"
fi

# --- tokens over TLS ---
record post_bad_token POST /v1/reconcile -H "Authorization: Bearer ${TOKEN}x"
check "POST with a wrong token is 401" test "$STATUS" = 401
check "401 is problem+json" grep -q 'application/problem+json' "$RESP/post_bad_token.meta"
check "401 says why" jq -e '.status == 401 and (.detail | test("not valid"))' "$RESP/post_bad_token.body"
record post_reconcile POST /v1/reconcile -H "Authorization: Bearer $TOKEN"
check "POST with the token is 202" test "$STATUS" = 202
wait_until 30 decided "$URL" || fail "the reconcile did not finish"
record post_selftest POST /v1/selftest -H "Authorization: Bearer $TOKEN"
check "POST /v1/selftest with the token is 202" test "$STATUS" = 202
wait_until 30 decided "$URL" || fail "the reconcile did not finish"

# --- p2pnode status ---
EXPECT_RC=1; [ "$STATE" = ready ] && EXPECT_RC=0
"$BIN" status --root "$ROOT" --config "$WORK/h200/p2pnode.yaml" --url "$URL" > "$WORK/status.txt" 2>&1; RC=$?
check "status trusts the configured certificate (exit $RC)" test "$RC" = "$EXPECT_RC"
check "status prints the check table" grep -q '^RESULT *CHECK' "$WORK/status.txt"
check "status prints the node state" grep -q "^node state: $STATE" "$WORK/status.txt"
# Without --url: the address and the scheme come from the configuration.
sed "s/^listen: .*/listen: 127.0.0.1:$PORT/" "$WORK/h200/p2pnode.yaml" > "$WORK/h200/status.yaml"
"$BIN" status --root "$ROOT" --config "$WORK/h200/status.yaml" --json > "$WORK/status.json" 2>&1; RC=$?
check "status finds https://127.0.0.1:$PORT in the configuration (exit $RC)" test "$RC" = "$EXPECT_RC"
check "status --json has the status" jq -e '.status.profile == "h200-nvlink"' "$WORK/status.json"
: > "$WORK/empty.yaml"
"$BIN" status --url "$URL" --cacert "$TLS/cert.pem" --config "$WORK/empty.yaml" >/dev/null 2>&1; RC=$?
check "status --cacert works without tls in the configuration (exit $RC)" test "$RC" = "$EXPECT_RC"
make_cert "$WORK/other" other someone-else
"$BIN" status --url "$URL" --cacert "$WORK/other/other.crt" > "$WORK/status_wrong_ca.txt" 2>&1; RC=$?
check "status against a CA that did not sign the certificate exits 2" test "$RC" = 2
check "and says the certificate did not verify" grep -q 'did not verify' "$WORK/status_wrong_ca.txt"
"$BIN" status --root "$ROOT" --config "$WORK/h200/p2pnode.yaml" --url "http://127.0.0.1:$PORT" > "$WORK/status_http.txt" 2>&1; RC=$?
check "status over plain http to the TLS port exits 2" test "$RC" = 2
check "and says the daemon speaks https" grep -q 'speaks https://' "$WORK/status_http.txt"

# --- idle connections and stalled handshakes cannot starve the event loops ---
python3 - "$PORT" > "$WORK/starve.out" 2>&1 <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(16)]   # connect, send nothing
stalled = []
for _ in range(4):   # the first bytes of a TLS record, then nothing: the handshake never completes
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(b"\x16\x03\x01\x02\x00\x01"); stalled.append(s)
print("holding", len(idle) + len(stalled), flush=True)
time.sleep(12)
PY
STARVER=$!
wait_until 5 grep -q holding "$WORK/starve.out" || fail "the starving client did not connect"
T0=$(date +%s%N)
"${CURL[@]}" -f -m 15 "$URL/livez" -o /dev/null && pass "served while 16 idle and 4 stalled handshakes" ||
  fail "served while 16 idle and 4 stalled handshakes"
MS=$(( ($(date +%s%N) - T0) / 1000000 ))
# A stalled handshake holds a socket, not a loop: the answer does not wait for them.
check "answered in $MS ms, not after the 12 s the clients hold on" test "$MS" -lt 3000
kill "$STARVER" 2>/dev/null; wait "$STARVER" 2>/dev/null

# --- SIGHUP with broken TLS files: the old certificate keeps serving ---
OLD_FP=$(served_fingerprint)
check "the served certificate is the configured one" test "$OLD_FP" = "$(file_fingerprint "$TLS/cert.pem")"
hup_and_expect_problem() {  # hup_and_expect_problem WHAT PATTERN
  local before; before=$(grep -c 'reload refused' "$WORK/h200/log")
  kill -HUP "$(cat "$WORK/h200/pid")"
  if wait_until 20 bash -c "[ \$(grep -c 'reload refused' '$WORK/h200/log') -gt $before ]"; then
    pass "$1: the reload is refused"
  else
    fail "$1: the reload is refused"; return
  fi
  grep -A1 'reload refused' "$WORK/h200/log" | tail -1 > "$WORK/refused.txt"  # the diagnostic follows
  check "$1: the log says why ($2)" grep -q "$2" "$WORK/refused.txt"
  check "$1: the log names p2pnode.yaml:$KEY_LINE" grep -q "p2pnode.yaml:$KEY_LINE:" "$WORK/refused.txt"
  check "$1: /v1/status reports the problem" bash -c \
    "${CURL[*]} '$URL/v1/status' | jq -r .daemon.config_problem | grep -q '$2'"
  check "$1: still serving https" "${CURL[@]}" -f "$URL/livez" -o /dev/null
  check "$1: with the old certificate" test "$(served_fingerprint)" = "$OLD_FP"
}
chmod 640 "$TLS/key.pem"
hup_and_expect_problem "a group-readable key" "readable by group or others"
chmod 600 "$TLS/key.pem"
make_cert "$WORK/other" mismatch mismatch
cp -p "$TLS/key.pem" "$WORK/key.saved"
cp "$WORK/other/mismatch.key" "$TLS/key.pem"; chmod 600 "$TLS/key.pem"
hup_and_expect_problem "a key of another certificate" "does not belong to the certificate"
printf 'garbage\n' > "$TLS/key.pem"
hup_and_expect_problem "a key that is not PEM" "holds no PEM private key"

# --- SIGHUP with a new certificate and key: new connections get it at once ---
make_cert "$TLS" rotated p2pnode-rotated
cp -p "$TLS/rotated.crt" "$TLS/cert.pem"; cp -p "$TLS/rotated.key" "$TLS/key.pem"
NEW_FP=$(file_fingerprint "$TLS/cert.pem")
kill -HUP "$(cat "$WORK/h200/pid")"
wait_until 20 bash -c "[ \"\$(openssl s_client -connect 127.0.0.1:$PORT </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256 2>/dev/null)\" = '$NEW_FP' ]" &&
  pass "after SIGHUP the new certificate is served" || fail "after SIGHUP the new certificate is served"
check "curl trusts the new certificate" curl -sf --cacert "$TLS/cert.pem" "$URL/livez" -o /dev/null
check "and no longer the old one" bash -c "! curl -sf --cacert '$TLS/server.crt' '$URL/livez' -o /dev/null"
grep -q 'TLS certificate reloaded for new connections: .*p2pnode-rotated' "$WORK/h200/log" &&
  pass "the reload is logged" || fail "the reload is logged"
check "the reload cleared the problem" bash -c \
  "curl -s --cacert '$TLS/cert.pem' '$URL/v1/status' | jq -e '.daemon.config_problem == null' >/dev/null"
# The HTTP process dies: the next one serves HTTPS with the certificate of the last reload, not
# the one the daemon started with.
HTTP_PID=$(cat /proc/"$(cat "$WORK/h200/pid")"/task/*/children | awk '{print $1}')
kill -KILL "$HTTP_PID"
check "after its HTTP process died the daemon answers HTTPS again" \
  wait_until 10 curl -sf --cacert "$TLS/cert.pem" "$URL/livez" -o /dev/null
check "with the reloaded certificate" test "$(served_fingerprint)" = "$NEW_FP"

# --- a certificate from a CA: status trusts the configured certificate itself, without the CA ---
CA="$WORK/ca"; mkdir -p "$CA"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=p2pnode-test-ca \
  -keyout "$CA/ca.key" -out "$CA/ca.crt" 2>/dev/null
(umask 077; openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=p2pnode-issued \
  -keyout "$TLS/key.pem" -out "$CA/leaf.csr" 2>/dev/null)
printf 'subjectAltName=IP:127.0.0.1\n' > "$CA/ext"
openssl x509 -req -in "$CA/leaf.csr" -CA "$CA/ca.crt" -CAkey "$CA/ca.key" -CAcreateserial -days 2 \
  -extfile "$CA/ext" -out "$TLS/cert.pem" 2>/dev/null
LEAF_FP=$(file_fingerprint "$TLS/cert.pem")
kill -HUP "$(cat "$WORK/h200/pid")"
wait_until 20 bash -c "[ \"\$(openssl s_client -connect 127.0.0.1:$PORT </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256 2>/dev/null)\" = '$LEAF_FP' ]" &&
  pass "after SIGHUP the CA-issued certificate is served" || fail "after SIGHUP the CA-issued certificate is served"
check "curl trusts it through the CA" curl -sf --cacert "$CA/ca.crt" "$URL/livez" -o /dev/null
"$BIN" status --root "$ROOT" --config "$WORK/h200/p2pnode.yaml" --url "$URL" >/dev/null 2>&1; RC=$?
check "status trusts the configured certificate without its CA (exit $RC)" test "$RC" = "$EXPECT_RC"
"$BIN" status --url "$URL" --cacert "$CA/ca.crt" --config "$WORK/empty.yaml" >/dev/null 2>&1; RC=$?
check "status --cacert with the CA works (exit $RC)" test "$RC" = "$EXPECT_RC"
# --cacert names CAs: the leaf alone is no CA, so the chain to a root is required there.
"$BIN" status --url "$URL" --cacert "$TLS/cert.pem" --config "$WORK/empty.yaml" >/dev/null 2>&1; RC=$?
check "status --cacert with only the leaf exits 2 (it is not a CA)" test "$RC" = 2

# --- a daemon whose TLS files are broken does not start ---
stop_daemon h200
chmod 644 "$TLS/key.pem"
timeout 20 "$BIN" serve --root "$ROOT" --config "$WORK/h200/p2pnode.yaml" --listen 127.0.0.1:0 > "$WORK/badstart.txt" 2>&1; RC=$?
chmod 600 "$TLS/key.pem"
check "a group-readable key at start exits 2" test "$RC" = 2
check "and names the key's line" grep -q "p2pnode.yaml:$KEY_LINE:.*tls.key_file.*readable by group or others" "$WORK/badstart.txt"

# --- every response against the OpenAPI document ---
if ensure_validator; then
  validate_responses && pass "every response matches api/openapi.yaml" || fail "responses match api/openapi.yaml"
else
  fail "OpenAPI validation: npm could not install openapi-response-validator and swagger-parser (npm is installed by scripts/install-deps.sh test; its output is above)"
fi

finish
