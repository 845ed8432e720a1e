// Command cosched-rank is the rank shim and keeper that agents start every
// rank through (node/rank/shim.Main): `cosched-rank -- PROGRAM ARGS...`
// stops itself until the agent continues it, then executes the program;
// `cosched-rank --keep ...` stays the program's parent so that it outlives
// its agent. make build puts it in lib/cosched/, where the agent looks
// first; without it the agent re-executes itself (`cosched __rank-exec`).
//
// It is a separate binary because every rank start, and every kept rank's
// memory for the rank's whole life, pays for the package initialisation
// and text of whatever binary the shim is: cosched links the simulator's
// plotting (fonts parsed at init), metrics exposition, gossip, raft and
// cgroup libraries; this one only the standard library and x/sys
// (deps_test.go keeps it so).
package main

import (
	"os"

	"github.com/cosched/cosched/node/rank/shim"
)

func main() {
	os.Exit(shim.Main(os.Args[1:]))
}
