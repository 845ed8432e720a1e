#!/usr/bin/env bash
# Submit a sharded sweep and its merge in one go:
#
#   deploy/slurm/submit-sweep.sh OUT_DIR SHARDS [cosched sim sweep flags...]
#
# e.g. deploy/slurm/submit-sweep.sh full 16 --mode space,gang,bcs --mpl 1,2,3,4 \
#        --slice 5ms,10ms,50ms,100ms --load 0.1:1.6:0.1 --workload w0,w1,w2,w3,w4
# Extra sbatch options (partition, account) go in SBATCH_* environment
# variables, which sbatch reads itself.
set -euo pipefail

out=${1:?usage: submit-sweep.sh OUT_DIR SHARDS [sweep flags...]}
shards=${2:?usage: submit-sweep.sh OUT_DIR SHARDS [sweep flags...]}
shift 2
case $shards in '' | *[!0-9]* | 0) echo "submit-sweep.sh: SHARDS must be a positive integer, got '$shards'" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

array=$(sbatch --parsable --array="1-$shards" "$here/sweep-array.sbatch" "$out" "$@")
array=${array%%;*} # --parsable prints "jobid[;cluster]"
merge=$(sbatch --parsable --dependency="afterok:$array" "$here/sweep-merge.sbatch" "$out")
merge=${merge%%;*}
echo "sweep: array job $array ($shards shards), then merge and plot job $merge; results in $out"
