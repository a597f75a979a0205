#!/usr/bin/env bash
# Produces the context-extension report for the default model in one command
# (docs/context-extension.md, part 7): trains the base model, its passkey
# practice, every RoPE scaling method zero-shot and fine-tuned, evaluates
# them all and writes runs/extend-report/report.md with tables and plots.
#
#   bash scripts/extend_report.sh                      # about half an hour on 2 cores
#   bash scripts/extend_report.sh finetune.steps=50    # arguments override report.yaml keys
#   bash scripts/extend_report.sh --smoke              # every step at a few optimizer
#                                                      # steps, into $ROTOR_RUNS_DIR/runs
#                                                      # (CI; no set-up: needs the build
#                                                      # and the Brown cache)
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
# Environment: as for scripts/run.sh, and ROTOR_RUNS_DIR (--smoke only:
# where its runs/ go; default the repository root).
set -euo pipefail

REPO_ROOT="$(CDPATH='' cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly BUILD_DIR="${ROTOR_BUILD_DIR:-${REPO_ROOT}/build}"
readonly ROTOR="${BUILD_DIR}/rotor"

smoke=0
overrides=()
for arg in "$@"; do
  if [[ "${arg}" == --smoke ]]; then smoke=1; else overrides+=("${arg}"); fi
done
if ((smoke)); then
  runs="${ROTOR_RUNS_DIR:-${REPO_ROOT}}/runs"
  overrides=(output_dir="${runs}/extend-report"
    "base.overrides=[output_dir=${runs}/default, train.max_steps=4, train.warmup_steps=2, eval.every_n_steps=0, checkpoint.every_n_steps=0, logging.progress=false]"
    base.practice.steps=2 base.practice.warmup_steps=1
    base.practice.output_dir="${runs}/default-passkey"
    finetune.steps=2 finetune.warmup_steps=1 finetune.tokens_per_step=2048
    eval.documents=1 eval.depths=[1] eval.trials=1 "${overrides[@]}")
else
  bash "${REPO_ROOT}/scripts/setup.sh" --with-data --with-plots
  ROTOR_BIN="${ROTOR}" bash "${REPO_ROOT}/scripts/fetch_brown.sh"
fi
cd "${REPO_ROOT}"
echo "extend_report.sh: ${ROTOR#"${REPO_ROOT}/"} extend-report configs/extend/report.yaml${overrides[*]:+ ${overrides[*]}}"
exec "${ROTOR}" extend-report configs/extend/report.yaml ${overrides[@]+"${overrides[@]}"}
