#!/usr/bin/env bash
# The house habits `make lint` checks beyond gofmt and vet:
#   - commit subjects at most 72 characters, for commits after HABITS_BASE
#     (the commit from which the rule holds);
#   - no Go file over 600 lines, except generated ones (*_gen.go).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${HABITS_BASE:-1eab287bde07e6bbfd066d281ac20f93f7ad690b}
fail=0
if git cat-file -e "$base^{commit}" 2>/dev/null; then
	long=$(git log --format=%s "$base..HEAD" | awk 'length($0) > 72')
	if [ -n "$long" ]; then
		echo "commit subjects over 72 characters (details belong in the body):"
		echo "$long"
		fail=1
	fi
else
	echo "habits: commit $base is not in this clone's history: subject lengths not checked"
fi
big=$(git ls-files '*.go' | grep -v '_gen\.go$' | while read -r f; do
	n=$(wc -l <"$f")
	if [ "$n" -gt 600 ]; then echo "$f ($n lines)"; fi
done)
if [ -n "$big" ]; then
	echo "Go files over 600 lines (split them by what they hold):"
	echo "$big"
	fail=1
fi
exit $fail
