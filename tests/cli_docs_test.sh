#!/usr/bin/env bash
# usage: cli_docs_test.sh DOCS/CLI.md COLLAGE COLLAGE_RUN COLLAGE_EXPLORER
# docs/cli.md documents exactly the flags the programs' --help prints: every --flag of
# `collage --help`, `collage-run --help` and `collage-explorer --help` appears in it, and every
# --flag it names is printed by one of them (a flag removed from the code leaves the doc too).
set -euo pipefail
doc=$1 collage=$2 run=$3 explorer=$4
flags() { grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }
runtime=$(mktemp -d "${TMPDIR:-/tmp}/collage-cli-docs.XXXXXX")
trap 'rm -rf "$runtime"' EXIT
help=$({
  "$collage" --help
  "$run" --help
  XDG_RUNTIME_DIR="$runtime" QT_QPA_PLATFORM=offscreen "$explorer" --help
} | flags)
[ "$(wc -l <<<"$help")" -gt 20 ] || { echo "cli_docs_test: too few flags in --help: $help" >&2; exit 1; }
documented=$(flags <"$doc")
missing=$(comm -23 <(printf '%s\n' "$help") <(printf '%s\n' "$documented"))
stale=$(comm -13 <(printf '%s\n' "$help") <(printf '%s\n' "$documented"))
status=0
if [ -n "$missing" ]; then echo "printed by --help but not in $doc:" $missing >&2; status=1; fi
if [ -n "$stale" ]; then echo "in $doc but printed by no --help:" $stale >&2; status=1; fi
[ $status -eq 0 ] && echo "cli_docs_test: $(wc -l <<<"$help") flags, each documented"
exit $status
