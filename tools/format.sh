#!/usr/bin/env bash
# The layout .clang-format gives the C lines changed since COMMIT (default HEAD, that is
# the changes not yet committed): printed as a diff, or written in place with --apply.
# Only changed lines: the tree is not reformatted. Advice, never a check: it exits 0
# whatever it finds, and says so where git-clang-format (clang-format's package) is missing.
#   tools/format.sh [--apply] [COMMIT]      e.g. tools/format.sh main
set -uo pipefail
cd "$(dirname "$0")/.."
mode=--diff
if [ "${1:-}" = --apply ]; then
	mode=
	shift
fi
commit=${1:-HEAD}
if ! command -v git-clang-format >/dev/null; then
	echo "format.sh: git-clang-format not found (apt-get install clang-format); nothing done"
	exit 0
fi
git clang-format $mode --extensions c,h "$commit" -- \
	base sandbox rundir gpu_pool llm kprof feedback fsm report orchestrator tests
exit 0
