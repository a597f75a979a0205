#!/usr/bin/env bash
# Runs rotor's main job: trains the default model on the Brown corpus and
# prints text samples from it. Safe to run any number of times, from any
# directory.
#
#   bash scripts/run.sh                        # see README: first build, then
#                                              # about 6 minutes of training
#   bash scripts/run.sh train.max_steps=50     # arguments go to rotor train
#
# Steps:
#   1. scripts/setup.sh --with-data --with-plots --rotor-only
#                                     missing Debian packages (including npm
#                                     and gnuplot), Release build of
#                                     build/rotor alone (scripts/test.sh
#                                     builds the tests and the rest)
#   2. scripts/fetch_brown.sh         downloads and prepares the Brown corpus
#                                     into ~/.cache/rotor (skipped when done)
#   3. build/rotor train configs/default.yaml [your arguments]
#      Checkpoints, metrics.jsonl and loss.png go to runs/default/ (relative
#      to the current directory); running again resumes from the newest
#      checkpoint, and once the run is complete prints the samples again.
#
# Environment: ROTOR_BUILD_DIR (default <repo>/build), ROTOR_CACHE_DIR
# (default ~/.cache/rotor), CMAKE_BUILD_PARALLEL_LEVEL (compile jobs).
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly BUILD_DIR="${ROTOR_BUILD_DIR:-${REPO_ROOT}/build}"
readonly ROTOR="${BUILD_DIR}/rotor"
readonly CONFIG="${REPO_ROOT}/configs/default.yaml"

bash "${REPO_ROOT}/scripts/setup.sh" --with-data --with-plots --rotor-only
ROTOR_BIN="${ROTOR}" bash "${REPO_ROOT}/scripts/fetch_brown.sh"
echo "run.sh: ${ROTOR#"${REPO_ROOT}/"} train ${CONFIG#"${REPO_ROOT}/"}${*:+ $*}"
exec "${ROTOR}" train "${CONFIG}" "$@"
