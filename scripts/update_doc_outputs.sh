#!/usr/bin/env bash
# Writes the output blocks of the docs again from a run of their commands
# (the blocks marked `<!-- doc-test: output -->`: docs/learn.md's ladder).
# The run-the-docs tests (tests/docs/docs_test.cc) run the same commands and
# fail when what they print drifts from what a page shows, on the kernels the
# page names (its `kernels:` line); run this after a change that moves the
# figures, on the machine whose kernels the page should name, then commit the
# pages and reword any sentence whose figures moved.
#
#   bash scripts/update_doc_outputs.sh            # docs/learn.md (Docs.Learn*)
#   bash scripts/update_doc_outputs.sh Readme     # another page's test
#
# Environment: ROTOR_BUILD_DIR (default <repo>/build, built with examples).
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly BUILD_DIR="${ROTOR_BUILD_DIR:-${REPO_ROOT}/build}"

case "${1:-}" in
  -h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
readonly FILTER="Docs.${1:-Learn}*"

cmake --build "${BUILD_DIR}" -j2 --target rotor_tests
ROTOR_UPDATE_DOC_OUTPUTS=1 "${BUILD_DIR}/tests/rotor_tests" \
  --gtest_filter="${FILTER}"
git -C "${REPO_ROOT}" diff --stat -- README.md docs/
