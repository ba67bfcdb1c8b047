#!/usr/bin/env bash
# usage: explorer_screenshot_size_test.sh COLLAGE_EXPLORER MODEL
# --screenshot shoots the window at the size a person sees (1600x1000) whatever the screen
# (the offscreen platform's is 800x600); --size sets another; a malformed size is exit 2.
set -euo pipefail
explorer=$1 model=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/collage-shot-size.XXXXXX")
trap 'rm -rf "$work"' EXIT
export QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR="$work" COLLAGE_COST_DB="$work/costs.sqlite"
# A PNG's width and height: big-endian 32-bit integers at bytes 16 and 20.
png_size() { od -An -tu1 -j16 -N8 "$1" | awk '{ printf "%dx%d\n", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8 }'; }
"$explorer" "$model" --screenshot "$work/default.png" 2>/dev/null
[ "$(png_size "$work/default.png")" = 1600x1000 ] || { echo "default shot is $(png_size "$work/default.png")" >&2; exit 1; }
"$explorer" "$model" --size 1200x760 --screenshot "$work/sized.png" 2>/dev/null
[ "$(png_size "$work/sized.png")" = 1200x760 ] || { echo "--size 1200x760 shot is $(png_size "$work/sized.png")" >&2; exit 1; }
set +e
out=$("$explorer" "$model" --size 1200 --screenshot "$work/bad.png" 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] && grep -q -- "--size: '1200' is not WIDTHxHEIGHT" <<<"$out" || { echo "bad --size: exit $rc: $out" >&2; exit 1; }
echo "explorer_screenshot_size_test: 1600x1000 by default, --size honoured, a bad size refused"
