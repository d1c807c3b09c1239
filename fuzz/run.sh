#!/bin/sh
# Runs one fuzz target for a while: seeds its corpus from the recorded fixtures when it is empty,
# then runs cargo-fuzz on a stable toolchain (RUSTC_BOOTSTRAP=1 lets it use the sanitizer flags
# it needs). A crash, a hang (10 s per input) or an input past 2 GB of memory stops it and
# leaves the input in artifacts/<target>/.
# Usage: fuzz/run.sh [parse_text|parse_plan] [seconds, default 900]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
target=${1:-parse_text}
seconds=${2:-900}
cd "$here"
if [ -z "$(ls -A "corpus/$target" 2>/dev/null)" ]; then
    ./seed-corpus.sh
fi
RUSTC_BOOTSTRAP=1 exec cargo fuzz run "$target" "corpus/$target" -- \
    -dict="$target.dict" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -max_total_time="$seconds" -print_final_stats=1
