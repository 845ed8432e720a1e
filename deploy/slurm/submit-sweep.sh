#!/usr/bin/env bash
# Submit a sharded sweep and its merge in one go:
#
#   deploy/slurm/submit-sweep.sh OUT_DIR SHARDS [cosched sim sweep flags...]
#
# e.g. deploy/slurm/submit-sweep.sh full 16 --parallel 4 --mode space,gang,bcs --mpl 1,2,3,4 \
#        --slice 5ms,10ms,50ms,100ms --load 0.1:1.6:0.1 --workload w0,w1,w2,w3,w4
# Each array task asks for as many CPUs as the sweep's --parallel (1 if
# not given) and simulates that many points at once; the script refuses,
# before submitting anything, a --parallel larger than the partition's
# largest node. Extra sbatch options (partition, account) go in SBATCH_*
# environment variables, which sbatch reads itself.
set -euo pipefail

usage="usage: submit-sweep.sh OUT_DIR SHARDS [sweep flags...]"
out=${1:?$usage}
shards=${2:?$usage}
shift 2
case $shards in '' | *[!0-9]* | 0) echo "submit-sweep.sh: SHARDS must be a positive integer, got '$shards'" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)

# The CPUs of each task follow the sweep's --parallel (its last one wins,
# as for the sweep).
cpus=1
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	case ${args[i]} in
	--parallel) cpus=${args[i + 1]:-} ;;
	--parallel=*) cpus=${args[i]#*=} ;;
	esac
done
case $cpus in '' | *[!0-9]* | 0) echo "submit-sweep.sh: --parallel must be a positive integer, got '$cpus'" >&2; exit 2 ;; esac

# A task no node can hold would stay pending for ever (reason PartitionConfig).
partition=()
if [[ -n ${SBATCH_PARTITION:-} ]]; then partition=(--partition "$SBATCH_PARTITION"); fi
if largest=$(sinfo -h -N "${partition[@]}" -o %c 2>/dev/null | tr -d '+' | sort -n | tail -n 1) && [[ -n $largest ]]; then
	if ((cpus > largest)); then
		echo "submit-sweep.sh: --parallel $cpus needs $cpus CPUs per array task, but the largest node${SBATCH_PARTITION:+ of partition $SBATCH_PARTITION} has $largest: use --parallel $largest or less" >&2
		exit 2
	fi
fi

mkdir -p "$out"
if ! array=$(sbatch --parsable --array="1-$shards" --cpus-per-task="$cpus" "$here/sweep-array.sbatch" "$out" "$@"); then
	echo "submit-sweep.sh: sbatch refused the array of $shards tasks of $cpus CPUs (its message above)" >&2
	exit 1
fi
array=${array%%;*} # --parsable prints "jobid[;cluster]"
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes "$here/sweep-merge.sbatch" "$out")
merge=${merge%%;*}
echo "sweep: array job $array ($shards shards, $cpus CPUs each), then merge and plot job $merge; results in $out"
