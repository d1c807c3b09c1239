#!/usr/bin/env bash
# Records the canned plans in fixtures/ from real PostgreSQL 13-18 servers, and the JIT cases
# (`-- server: jit`) from a server built with LLVM (PGPLAN_JIT_PG_BIN, else the newest
# /usr/lib/postgresql/<major> with llvmjit.so: apt-get install postgresql-15).
# Usage: scripts/record-fixtures.sh [--versions 15,18] [--cases seq_scan_filter,index_scan] [--formats-only]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/fetch-postgres.sh >/dev/null
cargo run --quiet --example record_fixtures -- "$@"
