package measure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/bench/experiment"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/localcluster"
	"github.com/cosched/cosched/sharing"
)

// MPILibName is the file of cosched's MPI library an agent needs for
// --mpi cosched jobs.
const MPILibName = "libmpich.so.12"

// DefaultMPILib is where make build puts cosched's MPI library for the
// binary exe (this process's when ""): lib/cosched beside its bin
// directory, where the agents look too.
func DefaultMPILib(exe string) string {
	if exe == "" {
		exe, _ = os.Executable()
	}
	return filepath.Join(filepath.Dir(filepath.Dir(exe)), "lib", "cosched")
}

// checkMPILib says, naming the directory, when cosched's MPI library is
// not in dir.
func checkMPILib(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, MPILibName)); err != nil {
		return fmt.Errorf("cosched's MPI library is not in %s (no %s): run `make build`, which builds it beside bin/cosched (needs gcc and MPICH's mpi.h: apt-get install mpich libmpich-dev), or point --mpi-lib at it",
			dir, MPILibName)
	}
	return nil
}

// mpiWorkload calibrates each of o.Programs alone (calibrateMPI) and
// returns the workload: every program Weight times, interleaved (one of
// each in file order, then again), all submitted at once.
func (o RunOptions) mpiWorkload(ctx context.Context) ([]experiment.Job, []experiment.MPIProgramModel, error) {
	cals, err := o.calibrateMPI(ctx)
	if err != nil {
		return nil, nil, err
	}
	net := o.simulated().Network
	var models []experiment.MPIProgramModel
	for i, p := range o.Programs.Programs {
		m, err := DeriveMPIModel(p, cals[i], net)
		if err != nil {
			return nil, nil, err
		}
		models = append(models, experiment.MPIProgramModel{Name: p.Name, Command: append([]string{p.Path}, p.Args...), Ranks: p.Ranks, Weight: p.Weight,
			Calibration: cals[i], Model: m})
	}
	var jobs []experiment.Job
	for round := 0; ; round++ {
		added := false
		for i, p := range o.Programs.Programs {
			if round >= p.Weight {
				continue
			}
			added = true
			m := models[i].Model
			seq := len(jobs)
			seed := jss.ProgramSeed(o.Point.Seed, int64(seq+1))
			t, err := bench.ParseTemplate(m.Template)
			if err != nil {
				return nil, nil, err
			}
			ded := jss.NewProgram(t, p.Ranks, m.Iterations, seed).RunDedicated(net)
			jobs = append(jobs, experiment.Job{Seq: seq, Processors: p.Ranks, Template: m.Template, Runtime: m.Runtime,
				Iterations: m.Iterations, Dedicated: ded.Runtime, Estimate: m.Runtime, Seed: seed,
				Program: p.Name, Command: models[i].Command, MPI: api.MPICosched, Dir: o.Programs.Dir,
				SoloCompute: ded.Compute})
		}
		if !added {
			break
		}
	}
	return jobs, models, nil
}

// calibrationRuns is how often each program runs alone: the first run
// on a fresh cluster pays for cold caches and the agents' first launch,
// so the faster run is the program's.
const calibrationRuns = 2

// calibrateMPI runs each program alone, calibrationRuns times, on a fresh space-shared
// local cluster of o.Nodes agents, and reads its runtime and the relays'
// counters of its traffic. A program that does not complete is an error
// naming it, its state and where its ranks' output is.
func (o RunOptions) calibrateMPI(ctx context.Context) ([]experiment.MPICalibration, error) {
	dir := filepath.Join(o.Dir, "calibration")
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "[calibrate] starting %d agents (space) to run each of %d programs alone...\n", o.Nodes, len(o.Programs.Programs))
	up := o.clusterOptions(sharing.Space, state)
	rec, err := localcluster.Up(ctx, up)
	if err != nil {
		return nil, fmt.Errorf("calibration: %w", err)
	}
	defer func() {
		if err := rec.Stop(localcluster.TempStopGrace); err != nil {
			fmt.Fprintf(o.Progress, "[calibrate] warning: %v\n", err)
		}
	}()
	cl := rec.Client()
	limit := o.StallTimeout
	if limit <= 0 {
		limit = 10 * time.Minute
	}
	var out []experiment.MPICalibration
	for _, p := range o.Programs.Programs {
		var c experiment.MPICalibration
		for run := range calibrationRuns {
			spec := api.JobSpec{Name: "calibrate-" + p.Name, Command: append([]string{p.Path}, p.Args...), Processors: p.Ranks,
				TimeLimit: api.Duration{D: limit}, MPI: api.MPICosched, Dir: o.Programs.Dir}
			id, err := cl.Submit(ctx, spec)
			if err != nil {
				return nil, fmt.Errorf("calibration of %s (%s:%d): submit: %w", p.Name, o.Programs.File, p.Line, err)
			}
			j, err := waitJob(ctx, cl, id, limit)
			if err != nil {
				return nil, fmt.Errorf("calibration of %s (%s:%d): %w", p.Name, o.Programs.File, p.Line, err)
			}
			if j.State != api.Completed || j.Start == nil || j.End == nil {
				return nil, fmt.Errorf("calibration of %s (%s:%d): alone, the program ended %s: %s (its ranks' output: %s)",
					p.Name, o.Programs.File, p.Line, j.State, j.Reason, filepath.Join(state, "agents"))
			}
			rc := experiment.MPICalibration{Program: p.Name, Ranks: p.Ranks, JobID: id, Runtime: j.End.Sub(*j.Start)}
			if err := addRelayCounters(ctx, cl, id, &rc); err != nil {
				return nil, fmt.Errorf("calibration of %s: the relays' counters: %w", p.Name, err)
			}
			if run == 0 || rc.Runtime < c.Runtime {
				c = rc
			}
		}
		fmt.Fprintf(o.Progress, "[calibrate] %s on %d ranks: %v alone (the faster of %d runs), %d messages (%d bytes), %d collectives\n",
			p.Name, p.Ranks, c.Runtime.Round(time.Millisecond), calibrationRuns, c.Sent, c.SentBytes, c.Collectives)
		out = append(out, c)
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	if err := atomicfile.WriteFile(filepath.Join(dir, "calibration.json"), append(b, '\n')); err != nil {
		return nil, err
	}
	return out, nil
}

// waitJob polls job id until it has ended, or limit passes (then it is
// cancelled).
func waitJob(ctx context.Context, cl *api.Client, id int64, limit time.Duration) (api.Job, error) {
	deadline := time.Now().Add(limit)
	for {
		j, err := cl.Job(ctx, id)
		if err != nil {
			return j, err
		}
		if j.State.Done() {
			return j, nil
		}
		if time.Now().After(deadline) {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = cl.Cancel(cctx, id)
			return j, fmt.Errorf("still %s after %v (cancelled; --stall-timeout sets the limit)", j.State, limit)
		}
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = cl.Cancel(cctx, id)
			return j, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// addRelayCounters adds job id's traffic as every agent's relay counted
// it to c.
func addRelayCounters(ctx context.Context, cl *api.Client, id int64, c *experiment.MPICalibration) error {
	rep, err := cl.Nodes(ctx, true)
	if err != nil {
		return err
	}
	seen := false
	for _, n := range rep.Nodes {
		if n.Stats == nil {
			continue
		}
		for _, js := range n.Stats.Relay.Jobs {
			if js.Job == id {
				seen = true
				c.Sent += js.Sent
				c.SentBytes += js.SentBytes
				c.Collectives += js.Collectives
				c.Probes += js.Probes
			}
		}
	}
	if !seen && c.Ranks > 1 {
		return errors.New("no relay reported the job (its ranks never spoke to a relay: is it an MPI program?)")
	}
	return nil
}

// clusterOptions are the local cluster of o's nodes in mode, its state in
// state.
func (o RunOptions) clusterOptions(mode sharing.Mode, state string) localcluster.Options {
	up := localcluster.DefaultOptions()
	up.Exe, up.Agents, up.Mode, up.Slice, up.MPL, up.Policy = o.Exe, o.Nodes, mode, o.Slice, o.MPL, o.Policy
	up.StateDir, up.RealtimePriority, up.Bandwidth = state, o.RealtimePriority, o.Bandwidth
	up.Temporary = true // the agents die with this command, however it ends
	if o.Programs != nil {
		up.MPILib = o.MPILib
	}
	if mode == sharing.Space {
		up.MPL = 1
	}
	up.Timeout = 30*time.Second + time.Duration(o.Nodes)*2*time.Second
	return up
}
