#!/bin/sh
# usage: cli_help_lists_commands.sh COLLAGE CLI_MAIN.cc
# Every command cli_main.cc dispatches has its line in `collage --help` (two were missing).
collage=$1 source=$2
help=$("$collage" --help) || { echo "collage --help failed" >&2; exit 1; }
commands=$(sed -n 's/.*if (command == "\([a-z]*\)").*/\1/p' "$source")
[ -n "$commands" ] || { echo "no commands found in $source" >&2; exit 1; }
missing=0
for c in $commands; do
  printf '%s\n' "$help" | grep -Eq "^  $c( |$)" || { echo "collage --help does not list '$c'" >&2; missing=1; }
done
exit $missing
