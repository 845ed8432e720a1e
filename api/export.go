package api

import (
	"fmt"
	"strings"
)

// agentVariable reports whether the agent sets name in every rank (or an
// MPI rank): ALL does not carry a submitter's own copies of them (a
// submit from inside a rank would otherwise hand its identity to the new
// job).
func agentVariable(name string) bool {
	switch name {
	case "COSCHED_JOB", "COSCHED_RANK", "COSCHED_SIZE", "COSCHED_NODE", "COSCHED_RELAY", "COSCHED_BENCH", "PMI_FD", "PMI_RANK", "PMI_SIZE":
		return true
	}
	return false
}

// ExportEnv is the environment a job's ranks get for an export list, as
// sbatch's --export: NONE (nothing: the ranks' base environment only), ALL (every
// variable of environ), or a comma-separated list of NAME (its value in
// environ, skipped if unset) and NAME=VALUE, optionally after ALL or NONE.
// Unlike sbatch, an explicit NAME=VALUE wins over ALL's value.
func ExportEnv(spec string, environ []string) ([]string, error) {
	var env []string
	for i, item := range strings.Split(spec, ",") {
		name, _, hasValue := strings.Cut(item, "=")
		switch {
		case i == 0 && item == "NONE":
		case i == 0 && item == "ALL":
			for _, kv := range environ {
				if n, _, _ := strings.Cut(kv, "="); !agentVariable(n) {
					env = append(env, kv)
				}
			}
		case item == "ALL" || item == "NONE":
			return nil, fmt.Errorf("%s: give it first (--export=%s,NAME,…)", item, item)
		case name == "" || strings.ContainsAny(name, " \t\x00"):
			return nil, fmt.Errorf("%q: want ALL, NONE, NAME or NAME=VALUE, separated by commas", item)
		case hasValue:
			env = append(env, item)
		default:
			for _, kv := range environ {
				if n, _, _ := strings.Cut(kv, "="); n == name {
					env = append(env, kv)
				}
			}
		}
	}
	size := 0
	for _, kv := range env {
		size += len(kv) + 1
	}
	switch {
	case len(env) > MaxEnvVars:
		return nil, fmt.Errorf("%d variables, more than a job may carry (%d): name the ones the job needs", len(env), MaxEnvVars)
	case size > MaxEnvBytes:
		return nil, fmt.Errorf("%d bytes of environment, more than a job may carry (%d): name the variables the job needs", size, MaxEnvBytes)
	}
	return env, nil
}
