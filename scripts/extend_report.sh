#!/usr/bin/env bash
# Produces the context-extension report for the default model in one command
# (docs/context-extension.md, part 7): trains the base model, its passkey
# practice, every RoPE scaling method zero-shot and fine-tuned, evaluates
# them all and writes runs/extend-report/report.md with tables and plots.
#
#   bash scripts/extend_report.sh                      # about half an hour on 2 cores
#   bash scripts/extend_report.sh finetune.steps=50    # arguments override report.yaml keys
#
# Steps:
#   1. scripts/setup.sh --with-data --with-plots
#                                     missing Debian packages (including npm
#                                     and gnuplot for the plots), Release build
#   2. scripts/fetch_brown.sh         the Brown corpus into ~/.cache/rotor
#   3. build/rotor extend-report configs/extend/report.yaml [your arguments],
#      from the repository root (the report config's paths are relative to
#      it). Every finished piece is kept under runs/, so running again after
#      an interruption continues where it stopped.
#
# Environment: as for scripts/run.sh.
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly BUILD_DIR="${ROTOR_BUILD_DIR:-${REPO_ROOT}/build}"
readonly ROTOR="${BUILD_DIR}/rotor"

bash "${REPO_ROOT}/scripts/setup.sh" --with-data --with-plots
ROTOR_BIN="${ROTOR}" bash "${REPO_ROOT}/scripts/fetch_brown.sh"
cd "${REPO_ROOT}"
echo "extend_report.sh: ${ROTOR#"${REPO_ROOT}/"} extend-report configs/extend/report.yaml${*:+ $*}"
exec "${ROTOR}" extend-report configs/extend/report.yaml "$@"
