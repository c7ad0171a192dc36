#!/usr/bin/env bash
# Installs redis-server from Debian's archive when it is missing (the sccache test starts its
# own server on loopback; nothing is left running). Idempotent; prints the server's path.
set -euo pipefail
if ! command -v redis-server >/dev/null 2>&1; then
  echo "install-redis: apt-get install redis-server" >&2
  export DEBIAN_FRONTEND=noninteractive
  # A private archive folder: the image's apt.conf.d/docker-clean deletes the shared one's
  # .deb files after every dpkg run. 755: apt downloads as _apt.
  arch=$(mktemp -d); chmod 755 "$arch"; mkdir -p "$arch/partial"
  opts=(-y -q --no-install-recommends -o Dir::Cache::Archives="$arch" -o DPkg::Lock::Timeout=300)
  if ! apt-get install "${opts[@]}" redis-server >&2; then
    apt-get update -q >&2
    apt-get install "${opts[@]}" redis-server >&2
  fi
  rm -rf "$arch"
  # Debian's package starts a system service where there is an init; the test runs its own.
  (service redis-server stop || true) >/dev/null 2>&1
fi
command -v redis-server
