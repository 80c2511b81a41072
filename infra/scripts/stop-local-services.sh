#!/usr/bin/env bash
# Stop the services started by infra/scripts/start-local-services.sh (by the pids it recorded, nothing else).
set -euo pipefail

DIR="${VHD_SERVICES_DIR:-${TMPDIR:-/tmp}/vhdplay-services}"
stopped=0
for name in llm moto prefect; do
  file="$DIR/$name.pid"
  [[ -f "$file" ]] || continue
  pid="$(cat "$file")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
    echo "stopped $name (pid $pid)"
    stopped=$((stopped + 1))
  fi
  rm -f "$file"
done
[[ "$stopped" -gt 0 ]] || echo "no services were running (pids in $DIR)"
