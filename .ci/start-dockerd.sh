#!/bin/sh
# Make sure a dockerd is up for the docker sandbox tests; safe to run again.
# The daemon gets no bridge and no iptables rules: sandbox containers always
# run with --network none, so they need neither.
set -eu

if ! command -v dockerd >/dev/null 2>&1; then
    bash "$(dirname "$0")/../scripts/apt-need.sh" docker.io
fi

if ! docker info >/dev/null 2>&1; then
    nohup dockerd --bridge=none --iptables=false >>/tmp/dockerd.log 2>&1 &
fi

i=0
until docker info >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -ge 60 ]; then
        echo "dockerd did not come up in 60 s; see /tmp/dockerd.log" >&2
        tail -n 20 /tmp/dockerd.log >&2 || true
        exit 1
    fi
    sleep 1
done
echo "dockerd is up"
