# shellcheck shell=bash
# apt_install LOG PKG...: install Debian packages, safely beside other steps doing the same.
#
# Sourced by the setup scripts (scripts/test runs several of them side by side). Every
# hpcdet script installs through here, under one lock (/run/lock/hpcdet-apt.lock), so two
# steps never race for dpkg's lock; `apt-get update` runs once per hour at most (a stamp
# beside the lock), not once per script; no package's init script starts a daemon. Output
# goes to LOG; on failure its tail is shown and the status is non-zero.
apt_install() {
  local log="$1"; shift
  [ "$#" -gt 0 ] || return 0
  command -v apt-get >/dev/null 2>&1 || { echo "apt_install: no apt-get to install $*" >&2; return 1; }
  mkdir -p /run/lock
  (
    flock 9
    export DEBIAN_FRONTEND=noninteractive
    # Keep the packages' init scripts from starting daemons with the distro's default
    # configuration (no systemd here): the scripts start what they need themselves.
    policy=/usr/sbin/policy-rc.d
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
      trap 'rm -f "$policy"' EXIT
    fi
    stamp=/run/lock/hpcdet-apt-updated
    if [ -z "$(find "$stamp" -mmin -60 2>/dev/null)" ]; then
      apt-get update -q -o DPkg::Lock::Timeout=600 && touch "$stamp" || exit 1
    fi
    apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=600 "$@"
  ) 9>/run/lock/hpcdet-apt.lock >"$log" 2>&1 || {
    tail -n 30 "$log" >&2
    echo "apt-get install $* failed (full log: $log)" >&2
    return 1
  }
}

# apt_missing PKG...: those of PKG... that dpkg has not installed, space-separated (one line).
apt_missing() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  echo "${missing[*]}"
}

# apt_ensure LOG PKG...: install those of PKG... that are missing (nothing when none is),
# naming them on stderr; non-zero, with the log's tail, when that fails.
apt_ensure() {
  local log="$1" missing
  shift
  missing="$(apt_missing "$@")"
  [ -z "$missing" ] && return 0
  echo "installing (apt): $missing..." >&2
  # shellcheck disable=SC2086  # one word per package
  apt_install "$log" $missing
}
