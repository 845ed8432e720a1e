// Package deploy holds cosched's deployment files. It has no Go code: its
// tests run the files the way their schedulers would.
//
//   - systemd/: cosched-agent.service and its environment file, one
//     variable per `cosched agent` flag. The tests check that the two and
//     the agent's flags agree, start agents from the unit's command line,
//     and run systemd-analyze verify where it is installed.
//   - slurm/: the sweep as a job array (sweep-array.sbatch, sweep-merge.sbatch,
//     submit-sweep.sh) and bench-run.sbatch (one agent per node of an
//     allocation, `cosched bench run --addr` against them, agents stopped on
//     exit). The tests run them on a real Slurm that deploy/slurmtest starts
//     on this host (skipped without root or Debian's slurmctld, slurmd,
//     slurm-client and munge); a fake srun remains only for node names that
//     resolve to distinct loopback addresses (COSCHED_BIND_ADDR=nodename).
//   - netns/cluster.sh: N agents in network namespaces joined by a bridge.
//     Its test runs as root where `ip netns` works and skips otherwise.
package deploy
