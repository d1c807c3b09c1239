#!/bin/sh
# Seeds the fuzz corpus with every recorded plan: server JSON, auto_explain's JSON and psql's
# pasted output. Run from anywhere; the corpus directory is git-ignored.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
corpus="$here/corpus/parse_plan"
mkdir -p "$corpus"
for f in "$here"/../fixtures/*/*.json "$here"/../fixtures/*/*.txt; do
    cp "$f" "$corpus/$(basename "$(dirname "$f")")__$(basename "$f")"
done
echo "$(ls "$corpus" | wc -l) inputs in $corpus"
