// Package deploy holds cosched's deployment scripts (systemd, Slurm,
// network namespaces). It has no Go code: its tests run the scripts the way
// their schedulers would.
package deploy
