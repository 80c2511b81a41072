#!/usr/bin/env bash
# Start the local services the tests and an offline setup use, on 127.0.0.1 only, in the background:
#   a Prefect server (SQLite)          PREFECT_PORT (default 4200)
#   moto_server as the S3 endpoint     MOTO_PORT    (default 5000)
#   the local model (`vhd llm serve`)  LLM_PORT     (default 8080), only with --llm
# Their pids and logs go to VHD_SERVICES_DIR (default ${TMPDIR:-/tmp}/vhdplay-services); stop them with
# infra/scripts/stop-local-services.sh. The settings to use them are printed at the end (and written to env.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${VHD_BIN:-$ROOT/.venv/bin}"
DIR="${VHD_SERVICES_DIR:-${TMPDIR:-/tmp}/vhdplay-services}"
PREFECT_PORT="${PREFECT_PORT:-4200}"
MOTO_PORT="${MOTO_PORT:-5000}"
LLM_PORT="${LLM_PORT:-8080}"
WITH_LLM=0
for arg in "$@"; do
  case "$arg" in
    --llm) WITH_LLM=1 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "error: unknown option $arg (use --llm to start the local model too)" >&2; exit 2 ;;
  esac
done
mkdir -p "$DIR"

port_free() {  # nothing listens there (a port in TIME_WAIT after a stop counts as free, as servers reuse it)
  "$BIN/python" -c "import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', int(sys.argv[1])))" "$1" 2>/dev/null
}

start() {  # name, health URL, command...
  local name="$1" url="$2"; shift 2
  if [[ -f "$DIR/$name.pid" ]] && kill -0 "$(cat "$DIR/$name.pid")" 2>/dev/null; then
    echo "$name already running (pid $(cat "$DIR/$name.pid"))"; return 0
  fi
  "$@" >"$DIR/$name.log" 2>&1 &
  echo $! >"$DIR/$name.pid"
  for _ in $(seq 1 "${VHD_START_TIMEOUT_S:-180}"); do
    if "$BIN/python" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" "$url" 2>/dev/null; then
      echo "$name ready on $url (pid $(cat "$DIR/$name.pid"), log $DIR/$name.log)"; return 0
    fi
    if ! kill -0 "$(cat "$DIR/$name.pid")" 2>/dev/null; then
      echo "error: $name exited; last lines of $DIR/$name.log:" >&2; tail -n 20 "$DIR/$name.log" >&2; exit 1
    fi
    sleep 1
  done
  echo "error: $name did not answer on $url in time; see $DIR/$name.log" >&2; exit 1
}

for pair in "prefect:$PREFECT_PORT" "moto:$MOTO_PORT"; do
  name="${pair%%:*}" port="${pair##*:}"
  if ! { [[ -f "$DIR/$name.pid" ]] && kill -0 "$(cat "$DIR/$name.pid")" 2>/dev/null; } && ! port_free "$port"; then
    echo "error: port $port for $name is in use on 127.0.0.1; choose another with ${name^^}_PORT=..." >&2; exit 1
  fi
done

PREFECT_HOME="${PREFECT_HOME:-$DIR/prefect-home}" PREFECT_SERVER_ANALYTICS_ENABLED=false \
  start prefect "http://127.0.0.1:$PREFECT_PORT/api/health" \
  "$BIN/prefect" server start --host 127.0.0.1 --port "$PREFECT_PORT"
start moto "http://127.0.0.1:$MOTO_PORT/moto-api/" "$BIN/moto_server" -H 127.0.0.1 -p "$MOTO_PORT"
if [[ "$WITH_LLM" == 1 ]]; then
  start llm "http://127.0.0.1:$LLM_PORT/v1/models" "$BIN/vhd" llm serve --port "$LLM_PORT"
fi

{
  echo "export PREFECT_API_URL=http://127.0.0.1:$PREFECT_PORT/api"
  echo "export VHD_S3_ENDPOINT_URL=http://127.0.0.1:$MOTO_PORT"
  echo "export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=us-east-1"
  if [[ "$WITH_LLM" == 1 ]]; then
    echo "export VHD_LLM_OPTIONS='{\"api_base\": \"http://127.0.0.1:$LLM_PORT/v1\", \"api_key\": \"local\"}'"
    echo "export VHD_LLM_RESPONSE_FORMAT=json_object"
  fi
} >"$DIR/env.sh"
echo "use them with: source $DIR/env.sh"
cat "$DIR/env.sh"
