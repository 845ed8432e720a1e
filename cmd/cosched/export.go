package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/cosched/cosched/api"
)

// agentVariables are set by the agent in every rank (or an MPI rank):
// --export=ALL does not carry a submitter's own copies of them (a submit
// from inside a rank would otherwise hand its identity to the new job).
var agentVariables = map[string]bool{
	"COSCHED_JOB": true, "COSCHED_RANK": true, "COSCHED_SIZE": true, "COSCHED_NODE": true,
	"COSCHED_RELAY": true, "COSCHED_BENCH": true, "PMI_FD": true, "PMI_RANK": true, "PMI_SIZE": true,
}

// exportEnv is the environment --export asks the ranks to get, as
// sbatch's: NONE (nothing: the ranks' base environment only), ALL (every
// variable of environ), or a comma-separated list of NAME (its value in
// environ, skipped if unset) and NAME=VALUE, optionally after ALL or NONE.
// Unlike sbatch, an explicit NAME=VALUE wins over ALL's value.
func exportEnv(spec string, environ []string) ([]string, error) {
	var env []string
	for i, item := range strings.Split(spec, ",") {
		name, _, hasValue := strings.Cut(item, "=")
		switch {
		case i == 0 && item == "NONE":
		case i == 0 && item == "ALL":
			for _, kv := range environ {
				if n, _, _ := strings.Cut(kv, "="); !agentVariables[n] {
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
	case len(env) > api.MaxEnvVars:
		return nil, fmt.Errorf("%d variables, more than a job may carry (%d): name the ones the job needs", len(env), api.MaxEnvVars)
	case size > api.MaxEnvBytes:
		return nil, fmt.Errorf("%d bytes of environment, more than a job may carry (%d): name the variables the job needs", size, api.MaxEnvBytes)
	}
	return env, nil
}

// submitEnv is exportEnv of this process's environment, for submit.
func submitEnv(spec string) ([]string, error) {
	return exportEnv(spec, os.Environ())
}
