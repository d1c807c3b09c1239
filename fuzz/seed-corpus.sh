#!/bin/sh
# Seeds the fuzz corpora with every recorded plan: server JSON, auto_explain's JSON and text logs,
# psql's pasted output in every style, TEXT, YAML and XML. Run from anywhere; the corpus
# directories are git-ignored.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
corpus="$here/corpus/parse_plan"
mkdir -p "$corpus"
text="$here/corpus/parse_text"
mkdir -p "$corpus" "$text"
for f in "$here"/../fixtures/*/*.json "$here"/../fixtures/*/*.txt "$here"/../fixtures/*/*.yaml \
    "$here"/../fixtures/*/*.xml "$here"/../fixtures/*/*.log; do
    cp "$f" "$corpus/$(basename "$(dirname "$f")")__$(basename "$f")"
done
for f in "$here"/../fixtures/formats/*.txt "$here"/../fixtures/formats/*.yaml \
    "$here"/../fixtures/formats/*.xml "$here"/../fixtures/formats/*.log; do
    cp "$f" "$text/$(basename "$f")"
done
echo "$(ls "$corpus" | wc -l) inputs in $corpus, $(ls "$text" | wc -l) in $text"
