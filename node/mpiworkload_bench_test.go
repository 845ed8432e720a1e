package node_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
)

// mpiWorkloadJob is one job of BenchmarkMPIWorkloadModes: an MPI program
// of mpi/testdata/workload running one of bench's templates.
type mpiWorkloadJob struct {
	template string // ⟨g,v,comm,sync⟩: news,B runs blocking.c, news,NB nonblocking.c
	procs    int
	runtime  time.Duration // dedicated, on the simulator's network model
}

// mpiWorkload is the mixed workload, every job submitted at once: fine-
// and coarse-grained blocking codes (MPI_Sendrecv with each torus
// neighbour) and non-blocking, collective-heavy ones (Isend/Irecv, an
// Allreduce, Waitall), of 2 and 4 ranks: 8 processes, which fill the 4
// processors × MPL 2 exactly.
func mpiWorkload() []mpiWorkloadJob {
	return []mpiWorkloadJob{
		{"10ms,5ms,news,B", 4, 1500 * time.Millisecond},
		{"20ms,10ms,news,NB", 4, 1500 * time.Millisecond},
		{"10ms,5ms,news,B", 2, 1500 * time.Millisecond},
		{"50ms,25ms,news,NB", 2, 1500 * time.Millisecond},
		{"50ms,25ms,news,B", 2, 1500 * time.Millisecond},
		{"100ms,50ms,news,NB", 2, 1500 * time.Millisecond},
	}
}

// mpiWorkloadRun is one mode's outcome, measured or simulated.
type mpiWorkloadRun struct {
	response []time.Duration // per job, in workload order
	makespan time.Duration
	reuses   uint64
}

func (r mpiWorkloadRun) meanResponse() float64 {
	var s time.Duration
	for _, d := range r.response {
		s += d
	}
	return s.Seconds() / float64(len(r.response))
}

// meanSlowdown is the mean of response / dedicated over the jobs whose
// template's sync is sync.
func (r mpiWorkloadRun) meanSlowdown(dedicated []time.Duration, sync string) float64 {
	var s float64
	n := 0
	for i, j := range mpiWorkload() {
		if strings.HasSuffix(j.template, ","+sync) {
			s += r.response[i].Seconds() / dedicated[i].Seconds()
			n++
		}
	}
	return s / float64(n)
}

// sliceSource delivers a fixed list of jobs to the simulator.
type sliceSource struct{ jobs []jss.Job }

func (s *sliceSource) Next() (jss.Job, error) {
	if len(s.jobs) == 0 {
		return jss.Job{}, io.EOF
	}
	j := s.jobs[0]
	s.jobs = s.jobs[1:]
	return j, nil
}

// simulateMPIWorkload runs mpiWorkload in the simulator's model of mode
// (space → BF, gang → BGS, bcs → BCS) on 4 processors at MPL mpl, with its
// default machine costs, and returns the outcome and each job's dedicated
// runtime.
func simulateMPIWorkload(b *testing.B, mode sharing.Mode, mpl int, slice time.Duration) (mpiWorkloadRun, []time.Duration) {
	cfg := jss.DefaultModelConfig(mode)
	cfg.Scheduler.Machine.Processors = 4
	cfg.Scheduler.MPL, cfg.Slice = mpl, slice
	if mode == sharing.Space {
		cfg.Scheduler.MPL, cfg.Slice = 1, 0
	}
	src := &sliceSource{}
	for i, j := range mpiWorkload() {
		src.jobs = append(src.jobs, jss.Job{
			Job:    gang.Job{ID: gang.JobID(i + 1), Processors: j.procs, Estimate: j.runtime, Template: j.template},
			Number: int64(i + 1), Runtime: j.runtime,
		})
	}
	run := mpiWorkloadRun{response: make([]time.Duration, len(mpiWorkload()))}
	dedicated := make([]time.Duration, len(mpiWorkload()))
	stats, err := jss.RunModel(context.Background(), cfg, src, func(r jss.Result) error {
		run.response[r.Number-1] = r.End - r.Submit
		dedicated[r.Number-1] = r.Runtime
		run.makespan = max(run.makespan, r.End)
		return nil
	})
	if err != nil {
		b.Fatalf("simulate %s: %v", mode, err)
	}
	run.reuses = uint64(stats.Reuses)
	return run, dedicated
}

// BenchmarkMPIWorkloadModes runs one mixed workload of real MPI programs
// (mpi/testdata/workload: blocking.c, news,B with MPI_Sendrecv;
// nonblocking.c, news,NB with Isend/Irecv, Allreduce and Waitall),
// compiled by MPICH's mpicc and run unmodified on cosched's library
// (--mpi cosched), under space, gang (5, 10, 50 ms slices) and bcs (2, 5,
// 10, 50 ms) at MPL 2, and gang and bcs at 5 ms at MPL 3, each on a fresh
// cluster of 4 agents of one processor (in the benchmark's process), and
// simulates the same jobs under each mode's
// model, as `cosched bench run` does for its Go benchmark jobs. Per mode:
// mean response and makespan, mean slowdown (response / dedicated
// runtime) of the blocking and of the non-blocking jobs, measured and
// simulated, and the slot reuses. The ranks wait rather than burn a core
// (work "wall", time stopped not counted), since 4 agents outnumber the
// cores. The table printed at the end compares the modes with each other
// within the run (its ÷space column needs the space sub-benchmark to run
// first). docs/mpi.md compares the modes with `cosched bench run
// --mpi-programs`, which pairs calibrated models with the same programs.
//
//	go test -run=^$ -bench=MPIWorkloadModes -benchtime=1x -timeout 60m ./node/
func BenchmarkMPIWorkloadModes(b *testing.B) {
	kit, progs := mpiKit(b, "mpi/testdata/workload/blocking.c", "mpi/testdata/workload/nonblocking.c")
	lib := func(cfg *node.Config) { cfg.MPILib = kit.LibDir }
	net := jss.DefaultModelConfig(sharing.BCS).Network
	type point struct {
		mode  sharing.Mode
		mpl   int
		slice time.Duration
	}
	ms := time.Millisecond
	points := []point{{sharing.Space, 1, 0},
		{sharing.Gang, 2, 5 * ms}, {sharing.Gang, 2, 10 * ms}, {sharing.Gang, 2, 50 * ms},
		{sharing.BCS, 2, 2 * ms}, {sharing.BCS, 2, 5 * ms}, {sharing.BCS, 2, 10 * ms}, {sharing.BCS, 2, 50 * ms},
		{sharing.Gang, 3, 5 * ms}, {sharing.BCS, 3, 5 * ms}}
	var table []string
	var spaceResp, spaceSim float64
	for _, p := range points {
		name := string(p.mode)
		if p.slice > 0 {
			name = fmt.Sprintf("%s-mpl%d-%v", p.mode, p.mpl, p.slice)
		}
		b.Run(name, func(b *testing.B) {
			sim, dedicated := simulateMPIWorkload(b, p.mode, p.mpl, p.slice)
			var meas mpiWorkloadRun
			for range b.N {
				meas = runMPIWorkload(b, progs, lib, p.mode, p.mpl, p.slice, net)
			}
			if p.mode == sharing.Space {
				spaceResp, spaceSim = meas.meanResponse(), sim.meanResponse()
			}
			b.ReportMetric(meas.meanResponse(), "resp-s")
			b.ReportMetric(sim.meanResponse(), "sim-resp-s")
			b.ReportMetric(meas.makespan.Seconds(), "makespan-s")
			b.ReportMetric(sim.makespan.Seconds(), "sim-makespan-s")
			b.ReportMetric(meas.meanSlowdown(dedicated, "B"), "slowdown-B")
			b.ReportMetric(sim.meanSlowdown(dedicated, "B"), "sim-slowdown-B")
			b.ReportMetric(meas.meanSlowdown(dedicated, "NB"), "slowdown-NB")
			b.ReportMetric(sim.meanSlowdown(dedicated, "NB"), "sim-slowdown-NB")
			b.ReportMetric(float64(meas.reuses), "reuses")
			b.ReportMetric(float64(sim.reuses), "sim-reuses")
			var jobs []string
			for i, j := range mpiWorkload() {
				jobs = append(jobs, fmt.Sprintf("%s×%d %.2f/%.2f", j.template, j.procs,
					meas.response[i].Seconds()/dedicated[i].Seconds(), sim.response[i].Seconds()/dedicated[i].Seconds()))
			}
			row := fmt.Sprintf("%-16s resp %.2f/%.2f s (÷space %.2f/%.2f)  makespan %.1f/%.1f s  slowdown B %.2f/%.2f NB %.2f/%.2f  reuses %d/%d\n    per job (slowdown measured/simulated): %s",
				name, meas.meanResponse(), sim.meanResponse(), meas.meanResponse()/spaceResp, sim.meanResponse()/spaceSim,
				meas.makespan.Seconds(), sim.makespan.Seconds(),
				meas.meanSlowdown(dedicated, "B"), sim.meanSlowdown(dedicated, "B"),
				meas.meanSlowdown(dedicated, "NB"), sim.meanSlowdown(dedicated, "NB"),
				meas.reuses, sim.reuses, strings.Join(jobs, "; "))
			table = append(table, row)
		})
	}
	// Printed, not logged: the agents' logs would bury it.
	fmt.Printf("BenchmarkMPIWorkloadModes, measured/simulated, 4 agents of 1 processor:\n%s\n", strings.Join(table, "\n"))
}

// runMPIWorkload submits mpiWorkload at once to a fresh cluster in mode,
// waits for every job, and returns their responses (the controller's
// submit to end), the makespan and the agents' slot reuses.
func runMPIWorkload(b *testing.B, progs []string, lib func(*node.Config), mode sharing.Mode, mpl int, slice time.Duration, net bench.Network) mpiWorkloadRun {
	b.Helper()
	o := clusterOpts{agents: 4, processors: 1, mode: mode, mpl: mpl, slice: slice, priority: 50, configure: lib}
	if mode == sharing.Space {
		o.mpl = 1
	}
	c := startCluster(b, o)
	defer c.stop()
	if mode == sharing.BCS {
		c.waitHeartbeats()
	}
	ctx := context.Background()
	ids := make([]int64, len(mpiWorkload()))
	for i, j := range mpiWorkload() {
		t, err := bench.ParseTemplate(j.template)
		if err != nil {
			b.Fatal(err)
		}
		prog := progs[0]
		if t.Sync == bench.NonBlocking {
			prog = progs[1]
		}
		// As many iterations as the simulator's program of this job has.
		iters := bench.Iterations(t, j.procs, net, j.runtime)
		cmd := []string{prog, fmt.Sprint(t.Grain.Microseconds()), fmt.Sprint(t.Imbalance.Microseconds()),
			fmt.Sprint(iters), fmt.Sprint(bench.DefaultMessageSize), fmt.Sprint(i + 1), "wall"}
		if ids[i], err = c.client.Submit(ctx, api.JobSpec{Name: fmt.Sprintf("w%d", i), Command: cmd, Processors: j.procs,
			TimeLimit: api.Duration{D: 20 * time.Minute}, MPI: api.MPICosched}); err != nil {
			b.Fatal(err)
		}
	}
	run := mpiWorkloadRun{response: make([]time.Duration, len(mpiWorkload()))}
	var first, last time.Time
	for i, id := range ids {
		j := c.waitDone(b, id, 20*time.Minute)
		if out := c.rankOutput(id, 0); j.State != api.Completed || !strings.HasPrefix(out, "PASS") {
			b.Fatalf("%s: job %d (%s×%d) %s (%s); rank 0 said %q", mode, id, mpiWorkload()[i].template, mpiWorkload()[i].procs, j.State, j.Reason, out)
		}
		run.response[i] = j.End.Sub(j.Submit)
		if i == 0 || j.Submit.Before(first) {
			first = j.Submit
		}
		if j.End.After(last) {
			last = *j.End
		}
	}
	run.makespan = last.Sub(first)
	if rep, err := c.client.Nodes(ctx, true); err == nil {
		for _, n := range rep.Nodes {
			if n.Stats != nil {
				run.reuses += n.Stats.SlotReuses
			}
		}
	}
	return run
}

// waitDone polls job id until it has ended.
func (c *testCluster) waitDone(b *testing.B, id int64, timeout time.Duration) api.Job {
	b.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		j, err := c.client.Job(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		if j.State.Done() {
			return j
		}
		if time.Now().After(deadline) {
			b.Fatalf("job %d still %s after %v", id, j.State, timeout)
		}
	}
}
