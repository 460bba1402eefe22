#!/bin/bash
# A fuzz campaign in 16 shards as a Slurm job array, merged by a job that waits for the whole
# array (docs/guides/scale.md). Submit from a directory that every node sees (the shards write
# their shard-K/ directories there):
#
#   jobid=$(sbatch --parsable --array=0-15 slurm-array.sh)
#   sbatch --dependency=afterany:"$jobid" slurm-array.sh merge
#
# Every shard runs the same --cases and --seed with its own --shard K/N; the merged result is the
# campaign run in one process when no shard reaches the failure limit (8 failures) or finds a hang.
#SBATCH --job-name=nvfp4-verify
#SBATCH --cpus-per-task=16
#SBATCH --time=02:00:00
#SBATCH --output=%x-%A-%a.log
set -euo pipefail

CASES=1000000
SEED=1
# The wheel (nvfp4_verify-<version>-<tag>.whl), on the shared file system; or `pip install
# nvfp4-verify` once it is published.
WHEEL=$(echo "$PWD"/nvfp4_verify-*.whl)

# nvfp4-verify in a virtual environment of the node's own scratch space.
venv=${TMPDIR:-/tmp}/nvfp4-verify-$SLURM_JOB_ID
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet "$WHEEL"
export PATH=$venv/bin:$PATH

if [ "${1:-}" = merge ]; then
  nvfp4-verify merge shard-* --report report --junit junit.xml --corpus found
  exit
fi

K=$SLURM_ARRAY_TASK_ID
N=$SLURM_ARRAY_TASK_COUNT
# Exit code 1: the shard found failures, which merge reports; 2 (a bad option, an output that
# cannot be written) fails the task.
nvfp4-verify fuzz --cases "$CASES" --seed "$SEED" --shard "$K/$N" --jobs "$SLURM_CPUS_PER_TASK" --out "shard-$K" ||
  [ $? -eq 1 ]
