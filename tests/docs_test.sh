#!/usr/bin/env bash
# usage: docs_test.sh SOURCE_DIR
# The documentation is a product's: README.md stays a page of at most 300 lines, the docs
# speak of the product and not of how it is made (the words of a development process are
# listed in `process_words`), every relative link in README.md and docs/ names a
# file that exists, and nothing in the repository points to files outside it.
set -euo pipefail
cd "$1"
status=0
lines=$(wc -l <README.md)
[ "$lines" -le 300 ] || { echo "README.md has $lines lines (at most 300)" >&2; status=1; }
# Bracketed letters keep this file from matching its own pattern.
process_words='\bsessio[n]\b|issu[e] [0-9]|\bsto[p] [0-9]|this V[M]'
words=$(grep -rniE "$process_words" README.md docs --include=*.md |
  grep -viE "measurement session|measure worker|--session|ONNX Runtime session|session\.intra_op" || true)
[ -z "$words" ] || { echo "words of a development process in the docs:" >&2; echo "$words" >&2; status=1; }
outside=$(git ls-files 2>/dev/null | grep -vE '^tests/data/' | xargs grep -lE '\.\./share[d]' 2>/dev/null || true)
[ -z "$outside" ] || { echo "files referring to a folder beside the checkout:" $outside >&2; status=1; }
for md in README.md docs/*.md; do
  dir=$(dirname "$md")
  for link in $(grep -oE '\]\([^) ]+\)' "$md" | sed 's/^](//; s/)$//; s/#.*//' | grep -vE '^$|^[a-z]+:' || true); do
    [ -e "$dir/$link" ] || { echo "$md links to $link, which does not exist" >&2; status=1; }
  done
done
[ $status -eq 0 ] && echo "docs_test: README $lines lines, docs clean, links resolve"
exit $status
