#!/usr/bin/env bash
# Records the canned plans in fixtures/ from real PostgreSQL 13-18 servers.
# Usage: scripts/record-fixtures.sh [--versions 15,18] [--cases seq_scan_filter,index_scan]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/fetch-postgres.sh >/dev/null
cargo run --quiet --example record_fixtures -- "$@"
