#!/usr/bin/env bash
# Sets up and builds rotor (scripts/setup.sh), then runs rotor's main job on
# its built-in defaults. Arguments are passed on to the program.
#
#   bash scripts/run.sh
#
# Today the main job is the teaching example examples/mlp_xor.cc: a small
# multilayer perceptron that learns XOR with rotor's tensors and autograd.
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly BUILD_DIR="${ROTOR_BUILD_DIR:-${REPO_ROOT}/build}"
readonly MAIN_JOB="${BUILD_DIR}/examples/mlp_xor"

bash "${REPO_ROOT}/scripts/setup.sh"
if [[ ! -x "${MAIN_JOB}" ]]; then
  echo "run.sh: ${MAIN_JOB} was not built (is examples/mlp_xor.cc there?)" >&2
  exit 1
fi
echo "run.sh: ${MAIN_JOB#"${REPO_ROOT}/"}${*:+ $*}"
exec "${MAIN_JOB}" "$@"
