#!/usr/bin/env bash
# A local sccache-dist cluster for tests and trials: one scheduler and one build server, both on
# 127.0.0.1 only, token-authenticated, the build server sandboxing compiles with bubblewrap in an
# overlay file system (it must run as root, as sccache-dist requires). Everything it writes lives
# under FOLDER; nothing listens on another address. The build server runs under `setarch -R`
# (no address randomisation) where it may, as cudawheel's own compiles do.
#
#   scripts/env/sccache-cluster.sh start FOLDER [--server-cpus LIST]   # LIST: taskset's, e.g. 2-15
#   scripts/env/sccache-cluster.sh status FOLDER                        # the scheduler's view (JSON)
#   scripts/env/sccache-cluster.sh stop FOLDER
#
# `start` prints the client configuration's path: point sccache at it with
# `SCCACHE_CONF=FOLDER/client.conf` (and a fresh `SCCACHE_SERVER_PORT` or a restarted sccache
# server: sccache reads its configuration when its server starts). Binaries: SCCACHE_DIST_BIN
# (default: the one scripts/env/install-sccache-dist.sh builds) and bwrap from PATH.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cmd=${1:-}; dir=${2:-}
[[ -n $cmd && -n $dir ]] || { sed -n '2,15p' "$0" >&2; exit 2; }
shift 2
server_cpus=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --server-cpus) server_cpus=$2; shift 2 ;;
    *) echo "sccache-cluster: unknown option $1" >&2; exit 2 ;;
  esac
done
BIN_DIR=$(dirname "${SCCACHE_DIST_BIN:-$ROOT/.cache/tools/sccache-dist/bin/sccache-dist}")
DIST=$BIN_DIR/sccache-dist

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

status() {
  # The scheduler's own status page is behind client auth: ask it as a client would.
  local url token
  url=$(sed -n 's/^scheduler_url = "\(.*\)"/\1/p' "$dir/client.conf")
  token=$(sed -n 's/^token = "\(.*\)"/\1/p' "$dir/client.conf")
  curl -sf -H "Authorization: Bearer $token" -H "Accept: application/json" "$url/api/v1/scheduler/status"
  echo
}

start() {
  [[ -x $DIST ]] || { echo "sccache-cluster: no $DIST; run scripts/env/install-sccache-dist.sh" >&2; exit 1; }
  local bwrap; bwrap=$(command -v bwrap) || { echo "sccache-cluster: no bwrap; run scripts/env/install-sccache-dist.sh" >&2; exit 1; }
  if alive "$dir/scheduler.pid" || alive "$dir/server.pid"; then
    echo "sccache-cluster: already running in $dir (stop it first)" >&2; exit 1
  fi
  mkdir -p "$dir"/{server/toolchains,server/build,client/toolchains,logs}
  chmod 700 "$dir"
  local sport bport key server_token client_token
  sport=$(free_port); bport=$(free_port)
  key=$("$DIST" auth generate-jwt-hs256-key)
  client_token=$("$DIST" auth generate-shared-token)
  server_token=$("$DIST" auth generate-jwt-hs256-server-token --secret-key="$key" --server "127.0.0.1:$bport")
  umask 077
  cat > "$dir/scheduler.conf" <<EOF
public_addr = "127.0.0.1:$sport"
[client_auth]
type = "token"
token = "$client_token"
[server_auth]
type = "jwt_hs256"
secret_key = "$key"
EOF
  cat > "$dir/server.conf" <<EOF
cache_dir = "$dir/server/toolchains"
public_addr = "127.0.0.1:$bport"
scheduler_url = "http://127.0.0.1:$sport"
[builder]
type = "overlay"
build_dir = "$dir/server/build"
bwrap_path = "$bwrap"
[scheduler_auth]
type = "jwt_token"
token = "$server_token"
EOF
  cat > "$dir/client.conf" <<EOF
[dist]
scheduler_url = "http://127.0.0.1:$sport"
toolchains = []
cache_dir = "$dir/client/toolchains"
[dist.auth]
type = "token"
token = "$client_token"
EOF
  local pin=()
  [[ -n $server_cpus ]] && pin=(taskset -c "$server_cpus")
  # The build server's compiles run without address randomisation, as cudawheel runs its own
  # (cicc's code for some files depends on where its data lands): a compile then gives there
  # what it gives here (compiles run at once may still differ: the reproducible-builds
  # reference). Where setarch cannot (a seccomp filter), the server runs as it is.
  if setarch "$(uname -m)" -R true 2>/dev/null; then pin+=(setarch "$(uname -m)" -R); fi
  SCCACHE_NO_DAEMON=1 SCCACHE_LOG=${SCCACHE_DIST_LOG:-info} nohup "$DIST" scheduler --config "$dir/scheduler.conf" \
    > "$dir/logs/scheduler.log" 2>&1 < /dev/null &
  echo $! > "$dir/scheduler.pid"
  SCCACHE_NO_DAEMON=1 SCCACHE_LOG=${SCCACHE_DIST_LOG:-info} nohup "${pin[@]}" "$DIST" server --config "$dir/server.conf" \
    > "$dir/logs/server.log" 2>&1 < /dev/null &
  echo $! > "$dir/server.pid"
  # Ready when the scheduler counts the server.
  for _ in $(seq 100); do
    if status 2>/dev/null | grep -q '"num_servers":[1-9]'; then
      echo "$dir/client.conf"; return 0
    fi
    if ! alive "$dir/scheduler.pid" || ! alive "$dir/server.pid"; then break; fi
    sleep 0.2
  done
  echo "sccache-cluster: the cluster did not come up; logs:" >&2
  tail -n 20 "$dir/logs/scheduler.log" "$dir/logs/server.log" >&2
  stop; exit 1
}

stop() {
  local f pid
  for f in "$dir/server.pid" "$dir/scheduler.pid"; do
    if alive "$f"; then
      pid=$(cat "$f"); kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}

case $cmd in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "sccache-cluster: start|stop|status FOLDER" >&2; exit 2 ;;
esac
