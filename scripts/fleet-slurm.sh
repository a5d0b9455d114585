#!/bin/bash
# One task of a Slurm job array over a dumpsift fleet manifest (docs/fleet.md): the array index is
# the manifest row. Submit it over every row, then resubmit the rows `fleet status` lists:
#
#   rows=$(wc -l < fleet.jsonl)
#   sbatch --array=0-$((rows - 1)) --export=ALL,FLEET_MANIFEST=$PWD/fleet.jsonl,FLEET_OUT=$PWD/out \
#       scripts/fleet-slurm.sh
#   todo=$(dumpsift fleet status fleet.jsonl --out out --array)
#   [ -z "$todo" ] || sbatch --array="$todo" --export=ALL,FLEET_MANIFEST=...,FLEET_OUT=... \
#       scripts/fleet-slurm.sh
#
# Environment (sbatch --export=ALL,NAME=VALUE,...):
#   FLEET_MANIFEST      the manifest (JSONL: id, dump, labels), on a file system every node sees
#   FLEET_OUT           the directory of reports and statuses, on a file system every node sees
#   DUMPSIFT            the dumpsift binary (default: dumpsift on the PATH)
#   FLEET_TIMEOUT       an analysis's time limit (default 10m)
#   FLEET_MAX_ATTEMPTS  attempts before a row is given up (default 3)
#   FLEET_OPTIONS       more options of `fleet task`: --html, --min-size 1M, ... (default --html)
# The analysis gets the task's CPUs (--threads $SLURM_CPUS_PER_TASK).
#
# Exit status: dumpsift's. 0 when the row is final (ok, truncated, bad input, or given up after
# FLEET_MAX_ATTEMPTS attempts); 124 (timeout), 75 (transient I/O) or 128+S (the analysis died by
# signal S) when it is worth another attempt: Slurm marks the task FAILED and does not retry it,
# and `fleet status` lists it. A task whose node fails is requeued by Slurm (--requeue).
#SBATCH --job-name=dumpsift-fleet
#SBATCH --requeue
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
set -euo pipefail
: "${FLEET_MANIFEST:?FLEET_MANIFEST: the manifest}" "${FLEET_OUT:?FLEET_OUT: the output directory}"
# shellcheck disable=SC2086  # FLEET_OPTIONS is a list of options
exec "${DUMPSIFT:-dumpsift}" fleet task "$FLEET_MANIFEST" --out "$FLEET_OUT" \
  --index-env SLURM_ARRAY_TASK_ID --timeout "${FLEET_TIMEOUT:-10m}" \
  --max-attempts "${FLEET_MAX_ATTEMPTS:-3}" --threads "${SLURM_CPUS_PER_TASK:-1}" \
  ${FLEET_OPTIONS---html}
