#!/usr/bin/env bash
# Installs the Debian packages named as arguments that are not installed yet.
# Idempotent: a package already present is left alone; when apt's lists are
# stale or empty (a fresh machine), it runs `apt-get update` and tries again.
# Usage: bash scripts/apt-need.sh PACKAGE...
set -euo pipefail
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "missing Debian packages: ${missing[*]}; run as root, or: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
echo "installing Debian packages: ${missing[*]}"
apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/kforge-apt.log 2>&1 \
  || { apt-get update -q >>/tmp/kforge-apt.log 2>&1 \
       && apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/kforge-apt.log 2>&1; } \
  || { echo "apt-get could not install ${missing[*]}; see /tmp/kforge-apt.log" >&2; tail -n 20 /tmp/kforge-apt.log >&2; exit 1; }
