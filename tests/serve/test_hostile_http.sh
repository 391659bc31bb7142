#!/bin/bash
# HTTP corpus against a real `p2pnode serve`, raw bytes over loopback (raw_http.py): what
# RFC 9110 and RFC 9112 forbid is answered 400 (an unknown transfer coding 501) by the HTTP process
# before any route, with the connection closed where its framing cannot be trusted; the bearer
# token followed by a NUL and junk is refused, not accepted; requests a client may send are still
# answered (a query, percent-encoding, bare LF, two requests in one write). Nothing is logged as an
# error by the daemon or its HTTP process. About 12 s (each answer left open is watched for 0.5 s).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/require.sh"
BIN=${1:?usage: test_hostile_http.sh PATH-TO-p2pnode}
source "$(dirname "$0")/lib.sh"
require curl jq python3
RESULT="$SRC/tests/fixtures/gpu-runs/h200x4-rounds.json"

make_node hh h200-4gpu "$SRC/profiles/h200-nvlink.yaml"
write_config hh "$SRC/tests/serve/agents/replay.sh" "[\"$RESULT\"]"
start_daemon hh || exit 1

# answers "WHAT" EXPECTED REQUEST [ANSWERS]: the daemon's answer to raw REQUEST is EXPECTED
# ("400 closed", "200 open", "200 200 open"; a bare code matches either ending).
answers() {
  local what=$1 expected=$2 got
  got=$(python3 "$SRC/tests/serve/raw_http.py" "$PORT" "$3" "${4:-1}")
  case $expected in
    *" "*) check "$what: $expected (got $got)" test "$got" = "$expected" ;;
    *) check "$what: $expected (got $got)" test "${got%% *}" = "$expected" ;;
  esac
}
H='Host: 127.0.0.1\r\n'
BEARER="Authorization: Bearer $TOKEN"

echo "--- the request line"
answers "a method with byte 0xFF" 400 "G\xffT /livez HTTP/1.1\r\n$H\r\n"
answers "a method with a NUL" 400 "GE\x00T /livez HTTP/1.1\r\n$H\r\n"
answers "a target with a NUL" 400 "GET /livez\x00junk HTTP/1.1\r\n$H\r\n"
answers "two spaces after the method" 400 "GET  /livez HTTP/1.1\r\n$H\r\n"
answers "a space inside the target" 400 "GET /livez /x HTTP/1.1\r\n$H\r\n"

echo "--- Host (RFC 9112 §3.2)"
answers "HTTP/1.1 without Host" 400 "GET /livez HTTP/1.1\r\n\r\n"
answers "HTTP/1.0 without Host is still answered" 200 "GET /livez HTTP/1.0\r\n\r\n"
answers "two Host fields" 400 "GET /livez HTTP/1.1\r\n${H}Host: evil.example\r\n\r\n"
answers "a folded (obs-fold) Host" 400 "GET /livez HTTP/1.1\r\nHost: local\r\n host\r\n\r\n"
answers "a folded other field" 400 "GET /livez HTTP/1.1\r\n${H}X-A: a\r\n\tb\r\n\r\n"
answers "a Host that is no host" 400 "GET /livez HTTP/1.1\r\nHost: a b\r\n\r\n"
answers "a forged but well-formed Host is still 421" 421 "GET /livez HTTP/1.1\r\nHost: evil.example\r\n\r\n"

echo "--- the body's framing (RFC 9112 §6)"
answers "two different Content-Length values" "400 closed" \
  "POST /v1/reconcile HTTP/1.1\r\n$H$BEARER\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}"
answers "Content-Length with Transfer-Encoding" "400 closed" \
  "POST /v1/reconcile HTTP/1.1\r\n$H$BEARER\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
answers "a transfer coding that is not chunked" "400 closed" \
  "POST /v1/reconcile HTTP/1.1\r\n${H}Transfer-Encoding: gzip\r\n\r\n"
answers "a coding before chunked" "501 closed" \
  "POST /v1/reconcile HTTP/1.1\r\n${H}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
answers "the same Content-Length twice is routed" 401 \
  "POST /v1/reconcile HTTP/1.1\r\n${H}Content-Length: 0\r\nContent-Length: 0\r\n\r\n"

echo "--- control bytes in a field (RFC 9110 §5.5)"
answers "the bearer token, a NUL and junk" "400 closed" \
  "POST /v1/reconcile HTTP/1.1\r\n$H$BEARER\x00junk\r\nContent-Length: 0\r\n\r\n"
answers "the bearer token and a NUL at the end of the head" 400 \
  "POST /v1/reconcile HTTP/1.1\r\n${H}Content-Length: 0\r\n$BEARER\x00junk\r\n\r\n"
answers "the bearer token and a control byte" 400 \
  "POST /v1/reconcile HTTP/1.1\r\n$H$BEARER\x01\r\nContent-Length: 0\r\n\r\n"
answers "a NUL right after a colon" 400 "GET /livez HTTP/1.1\r\n${H}X-A:\x00junk\r\n\r\n"
answers "a bare CR in a value" 400 "GET /livez HTTP/1.1\r\n${H}X-A: a\rb\r\n\r\n"
answers "the bearer token alone is accepted" 202 \
  "POST /v1/reconcile HTTP/1.1\r\n$H$BEARER\r\nContent-Length: 0\r\n\r\n"

echo "--- what a client may send is still answered"
answers "a query" "200 open" "GET /livez?a=1&b=%20 HTTP/1.1\r\n$H\r\n"
answers "a percent-encoded path" 200 "GET /li%76ez HTTP/1.1\r\n$H\r\n"
answers "bare LF line ends" 200 "GET /livez HTTP/1.1\n${H%\\r\\n}\n\n"
answers "an empty field and a cookie" 200 "GET /livez HTTP/1.1\r\n${H}X-Empty:\r\nCookie: a=b; c=d\r\n\r\n"
answers "spaces and tabs around a value" 200 "GET /livez HTTP/1.1\r\nHost: \t 127.0.0.1 \t\r\n\r\n"
BIG=$(for i in $(seq 1 50); do printf 'X-Filler-%s: %0300d\\r\\n' "$i" 0; done)
answers "a 15 KiB head of 50 fields (libmicrohttpd grows its buffer)" 200 "GET /livez HTTP/1.1\r\n$H$BIG\r\n"
answers "two requests in one write" "200 200 open" "GET /livez HTTP/1.1\r\n$H\r\nGET /readyz HTTP/1.1\r\n$H\r\n" 2
answers "a request after a refused one on the same connection is not read" "400 closed" \
  "GET /livez HTTP/1.1\r\n${H}X-A: \x01\r\n\r\nGET /livez HTTP/1.1\r\n$H\r\n" 2

check "still serving after the corpus" curl -sf "$URL/livez" -o /dev/null
check "the daemon logged no error" bash -c "! grep -E '^p2pnode(-http)?\[error\]' '$WORK/hh/log'"
grep -E '^p2pnode(-http)?\[error\]' "$WORK/hh/log"

finish
