#!/usr/bin/env bash
# usage: skip_report.sh CTEST_OUTPUT LAST_TEST_LOG
# After a CTest run: each skipped test with the reason it gave (GTEST_SKIP() << reason, read
# from CTest's LastTest.log), then one closing line "tests: P passed, F failed, S skipped".
set -euo pipefail
summary=$1 log=$2
total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$summary" | tail -1)
failed=$(sed -n 's/.* \([0-9]*\) tests failed out of .*/\1/p' "$summary" | tail -1)
skipped=$(grep -c '(Skipped)' "$summary" || true)
if [ -z "$total" ]; then echo "skip_report: no CTest summary in $summary" >&2; exit 0; fi
if [ "$skipped" -gt 0 ] && [ -f "$log" ]; then
  echo "skipped tests and why:"
  # The skipped tests' names from CTest's list, their reasons from LastTest.log, which holds each
  # test's output after a "N/M Test: NAME" line: googletest writes "FILE:LINE: Skipped" and the
  # reason on the next line; a script that exits with its skip code says "skipped: REASON".
  awk '
    FNR == NR { skipped[$0] = 1; next }
    /^[0-9]+\/[0-9]+ Test: / { sub(/^[0-9]+\/[0-9]+ Test: /, ""); name = $0; next }
    !(name in skipped) { next }
    want { if ($0 != "") { print "  " name ": " $0; want = 0 } ; next }
    /: Skipped$/ { want = 1; next }
    /^skipped: / { sub(/^skipped: /, ""); print "  " name ": " $0 }
  ' <(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$summary") "$log" | sort -u
fi
echo "tests: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
