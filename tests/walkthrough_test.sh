#!/usr/bin/env bash
# usage: walkthrough_test.sh README.md SOURCE_DIR BUILD_DIR
# Runs the README's five-minute walkthrough as written: every line of the ```sh blocks between
# <!-- walkthrough:begin --> and <!-- walkthrough:end -->, in order, in a directory of its own
# that sees the checkout's resources/, app/ and build/ (BUILD_DIR). The explorer line gets
# --screenshot (it would otherwise wait for a person); the cost DB is a throw-away file.
set -euo pipefail
readme=$1 source=$2 build=$3
script=$(awk '
  /<!-- walkthrough:begin -->/ { on = 1; next }
  /<!-- walkthrough:end -->/ { on = 0 }
  on && /^```sh/ { code = 1; next }
  on && /^```/ { code = 0; next }
  on && code { print }
' "$readme")
[ -n "$script" ] || { echo "walkthrough_test: no sh block between the walkthrough markers in $readme" >&2; exit 1; }
grep -q '^collage tune' <<<"$script" || { echo "walkthrough_test: the walkthrough does not tune" >&2; exit 1; }
grep -q '^collage-run' <<<"$script" || { echo "walkthrough_test: the walkthrough does not run the artifact" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/collage-walkthrough.XXXXXX")
trap 'rm -rf "$work"' EXIT
ln -s "$source/resources" "$work/resources"
ln -s "$source/app" "$work/app"
ln -s "$build" "$work/build"
export COLLAGE_COST_DB="$work/costs.sqlite" QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR="$work/runtime"
mkdir -m 700 "$work/runtime"
printf '%s\n' "$script" | sed 's|^\(collage-explorer .*\)$|\1 --screenshot explorer.png|' > "$work/walkthrough.sh"
cd "$work"
echo "---- the walkthrough ----"
cat walkthrough.sh
echo "------------------------"
bash -xeuo pipefail walkthrough.sh
test -s explorer.png || { echo "walkthrough_test: the explorer saved no picture" >&2; exit 1; }
echo "walkthrough_test: every command ran"
