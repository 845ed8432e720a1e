package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/mpi/mpibuild"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
)

// mpiLibKit is cosched's MPI library, built for the package's tests, and
// programs compiled against MPICH: what mpi/build.sh and the system's
// mpicc make, as a user's tree would have them.
type mpiLibKit struct {
	LibDir string // libmpich.so.12 (cosched's)
	binDir string
	mu     sync.Mutex
	progs  map[string]string
}

// sharedKit is the kit built once for the package's tests (mpiKit);
// TestMain removes its directory.
var sharedKit struct {
	once sync.Once
	dir  string
	kit  *mpiLibKit
	err  error
	skip string // why the kit cannot be built here
}

// repoRoot is the repository's root: tests run in the package's
// directory.
const repoRoot = ".."

// buildMPIKit runs mpi/build.sh into dir/lib; skip says why it cannot
// be built here (no library sources in the tree, no gcc or MPICH's
// headers).
func buildMPIKit(ctx context.Context, dir string) (kit *mpiLibKit, skip string, err error) {
	script := filepath.Join(repoRoot, "mpi", "build.sh")
	if _, err := os.Stat(script); err != nil {
		return nil, "cosched's MPI library is not in this tree (" + script + ")", nil
	}
	if _, err := exec.LookPath(mpibuild.MPICC()); err != nil {
		return nil, "mpicc not found: install Debian's mpich and libmpich-dev (.ci/run does)", nil
	}
	kit = &mpiLibKit{LibDir: filepath.Join(dir, "lib"), binDir: filepath.Join(dir, "bin"), progs: map[string]string{}}
	if err := os.MkdirAll(kit.binDir, 0o755); err != nil {
		return nil, "", err
	}
	out, err := exec.CommandContext(ctx, "sh", script, kit.LibDir).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 3: // the script's "toolchain missing"
		return nil, strings.TrimSpace(string(out)), nil
	case err != nil:
		return nil, "", fmt.Errorf("%s: %v\n%s", script, err, out)
	}
	return kit, "", nil
}

// program compiles src (relative to the repository's root) with mpicc
// -O2, or a Fortran one (.f90) with mpif90 -O2, once per kit.
func (k *mpiLibKit) program(ctx context.Context, src string) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p, ok := k.progs[src]; ok {
		return p, nil
	}
	ext := filepath.Ext(src)
	out := filepath.Join(k.binDir, fmt.Sprintf("%s-%d", strings.TrimSuffix(filepath.Base(src), ext), len(k.progs)))
	compiler, args := mpibuild.MPICC(), []string{"-O2", "-o", out, filepath.Join(repoRoot, src), "-lm"}
	if ext == ".f90" {
		// gfortran writes a module's .mod file where it runs, unless told
		compiler, args = mpibuild.MPIF90(), []string{"-O2", "-o", out, "-J", k.binDir, filepath.Join(repoRoot, src)}
	}
	if b, err := exec.CommandContext(ctx, compiler, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", compiler, src, err, b)
	}
	k.progs[src] = out
	return out, nil
}

// mpiKit returns cosched's MPI library and the programs named, relative
// to the repository's root, compiled with MPICH's mpicc; it skips where
// they cannot be built (CI installs the toolchain).
func mpiKit(t testing.TB, srcs ...string) (*mpiLibKit, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sharedKit.once.Do(func() {
		if sharedKit.dir, sharedKit.err = os.MkdirTemp("", "cosched-node-mpi"); sharedKit.err == nil {
			sharedKit.kit, sharedKit.skip, sharedKit.err = buildMPIKit(ctx, sharedKit.dir)
		}
	})
	kit := sharedKit.kit
	switch {
	case sharedKit.err != nil:
		t.Fatal(sharedKit.err)
	case sharedKit.skip != "":
		t.Skip(sharedKit.skip)
	}
	var progs []string
	for _, src := range srcs {
		p, err := kit.program(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		progs = append(progs, p)
	}
	return kit, progs
}

// mpiKitProgram compiles one more program for kit (see mpiKit).
func mpiKitProgram(t testing.TB, kit *mpiLibKit, src string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := kit.program(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// removeMPIKit removes what mpiKit built.
func removeMPIKit() {
	if sharedKit.dir != "" {
		os.RemoveAll(sharedKit.dir)
	}
}

// checkPassed fails unless the job completed, every rank exited 0
// without a FAIL line, and rank 0 said PASS (the conformance programs'
// verdict).
func (c *testCluster) checkPassed(what string, j api.Job) {
	c.t.Helper()
	ok := j.State == api.Completed && strings.Contains(c.rankOutput(j.ID, 0), "PASS")
	for _, r := range j.Ranks {
		ok = ok && r.Code == 0 && !strings.Contains(c.rankOutput(j.ID, r.Rank), "FAIL")
	}
	if !ok {
		c.dump()
		c.t.Fatalf("%s: job %d %s (%s), ranks %+v", what, j.ID, j.State, j.Reason, j.Ranks)
	}
}

// MPICH programs, compiled by the system's mpicc and linked against its
// libmpich.so.12, run unmodified on cosched's MPI library (--mpi cosched)
// in every mode, their ranks spread unevenly over two agents: the
// collective conformance program (and the point-to-point one and the
// Fortran one, mpif90's, in space and bcs, immediate and buffered
// delivery) pass their own checks, every message goes through the relays (the job's counters
// there: sent = delivered, collectives announced), under bcs in slice
// transfers; a cancelled job, its ranks blocked in the kernel or stopped
// between slices, leaves no process.
func TestMPICoschedInEveryMode(t *testing.T) {
	kit, progs := mpiKit(t, "mpi/testdata/conformance/p2p.c", "mpi/testdata/conformance/coll.c", "pmi/testdata/ring.c")
	p2p, coll, ring := progs[0], progs[1], progs[2]
	var fortran string // a Fortran program, in space and bcs
	if err := mpibuild.CheckFortran(); err != nil {
		t.Logf("no Fortran program run: %v", err)
	} else {
		fortran = mpiKitProgram(t, kit, "mpi/testdata/conformance/fortran.f90")
	}
	for _, mode := range sharing.Modes() {
		t.Run(string(mode), func(t *testing.T) {
			o := clusterOpts{agents: 2, processors: 2, mode: mode, mpl: 2, slice: 10 * time.Millisecond,
				configure: func(cfg *node.Config) { cfg.MPILib = kit.LibDir }}
			if mode == sharing.Space {
				o.mpl = 1
			}
			c := startCluster(t, o)
			if mode.TimeShared() {
				c.waitHeartbeats()
			}
			before := c.relayStats()
			// The point-to-point program moves 60 MB (large messages cut
			// in fragments): in the modes that differ in delivery only.
			progs := []string{coll}
			if mode == sharing.Space || mode == sharing.BCS {
				progs = []string{p2p, coll}
				if fortran != "" {
					progs = append(progs, fortran)
				}
			}
			for _, prog := range progs {
				start := time.Now()
				id := c.submit(api.JobSpec{Command: []string{prog}, Processors: 3, MPI: api.MPICosched})
				j := waitDone(t, c, id, 3*time.Minute)
				t.Logf("%s: %v", filepath.Base(prog), time.Since(start))
				c.checkPassed(filepath.Base(prog), j)
				js := c.jobTraffic(id)
				if js.Sent == 0 || js.Sent != js.Delivered || js.SentBytes != js.DeliveredBytes {
					t.Errorf("%s: the job's messages at the relays: %+v", filepath.Base(prog), js)
				}
				// Two of the three ranks at least share a node: in the
				// immediate modes their relay grants them a channel, whose
				// bytes the relay still counts (API and /metrics); bcs, none.
				if chanOK := js.ChannelBytes > 0 && js.ChannelBytes <= js.SentBytes; chanOK != (mode != sharing.BCS) {
					t.Errorf("%s: %d of %d bytes over same-node channels", filepath.Base(prog), js.ChannelBytes, js.SentBytes)
				}
				if m := c.jobMetric("cosched_relay_job_channel_bytes_total", id); m != float64(js.ChannelBytes) {
					t.Errorf("%s: /metrics says %v bytes over channels, the API %d", filepath.Base(prog), m, js.ChannelBytes)
				}
				if prog == coll && js.Collectives == 0 {
					t.Errorf("coll: no collective announced to the relays: %+v", js)
				}
				t.Logf("%s: %d messages, %d bytes, %d collectives through the relays", filepath.Base(prog), js.Sent, js.SentBytes, js.Collectives)
			}
			if mode == sharing.BCS {
				// Every message went in a slice's transfer, as announced
				// (the last slices' counts may still be on their way).
				eventually(t, 10*time.Second, func() error {
					st := c.relayStats()
					if st.Announced == before.Announced || st.AnnouncedIn != st.ReceivedIn || st.AnnouncedInBytes != st.ReceivedInBytes || st.Transferred != st.Announced {
						return fmt.Errorf("bcs relay totals %+v", st)
					}
					return nil
				})
			} else if st := c.relayStats(); st.Announced != 0 {
				t.Errorf("%s: messages announced for slices: %+v", mode, st)
			}

			if mode != sharing.Local {
				runNetPIPE(t, c, mode)
			}
			if mode == sharing.Gang || mode == sharing.BCS {
				id := c.submit(api.JobSpec{Command: []string{ring, "100000000"}, Processors: 3, MPI: api.MPICosched})
				c.waitExec(id, 3, filepath.Base(ring))
				time.Sleep(200 * time.Millisecond) // well into the run
				if err := c.client.Cancel(context.Background(), id); err != nil {
					t.Fatal(err)
				}
				c.waitState(id, api.Cancelled, 20*time.Second)
				c.waitGone(id)
			}
		})
	}
}

// runNetPIPE runs Debian's NetPIPE build for MPICH (NPmpich2, a public
// program no one here wrote), unmodified, as a --mpi cosched job of two
// ranks, with its integrity check; under bcs every round
// trip waits for slices, so over fewer sizes.
func runNetPIPE(t *testing.T, c *testCluster, mode sharing.Mode) {
	t.Helper()
	np, err := exec.LookPath("NPmpich2")
	if err != nil {
		t.Log("NPmpich2 not installed (apt-get install netpipe-mpich2): NetPIPE not run")
		return
	}
	args := []string{np, "-i", "-u", "65536", "-n", "2", "-o", "/dev/null"}
	if mode == sharing.BCS {
		args = []string{np, "-i", "-u", "4096", "-n", "2", "-o", "/dev/null"}
	}
	start := time.Now()
	id := c.submit(api.JobSpec{Command: args, Processors: 2, MPI: api.MPICosched})
	j := waitDone(t, c, id, 3*time.Minute)
	said := func(rank int) string { // NetPIPE reports on both streams
		all := c.rankOutput(id, rank)
		for i := range c.agents {
			b, _ := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("n%d", i), "jobs", fmt.Sprint(id), fmt.Sprintf("rank-%d.err", rank)))
			all += string(b)
		}
		return all
	}
	out := said(0)
	ok := j.State == api.Completed && strings.Contains(out, "Integrity check")
	for _, r := range j.Ranks {
		o := said(r.Rank)
		ok = ok && r.Code == 0 && !strings.Contains(o, "failed") && !strings.Contains(o, "FAIL")
	}
	if !ok {
		c.dump()
		t.Fatalf("NetPIPE (%s): job %d %s (%s), ranks %+v; rank 0 said:\n%s", strings.Join(args[1:], " "), id, j.State, j.Reason, j.Ranks, out)
	}
	if js := c.jobTraffic(id); js.Sent == 0 || js.Sent != js.Delivered {
		t.Errorf("NetPIPE: the job's messages at the relays: %+v", js)
	}
	t.Logf("NetPIPE %s: %v", strings.Join(args[1:], " "), time.Since(start))
}

// A call outside cosched's subset fails the job with the call's name, and
// MPI_Abort with the rank, its node, the code and the message; no rank is
// left behind.
func TestMPICoschedUnsupportedAndAbort(t *testing.T) {
	kit, progs := mpiKit(t, "mpi/testdata/conformance/unsupported.c", "pmi/testdata/ring.c")
	unsupported, ring := progs[0], progs[1]
	c := startCluster(t, clusterOpts{agents: 2, processors: 2, mode: sharing.Space,
		configure: func(cfg *node.Config) { cfg.MPILib = kit.LibDir }})
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{unsupported, "win"}, `^rank \d on n\d: MPI_Win_create_dynamic is not supported by cosched's MPI$`},
		{[]string{unsupported, "spawn"}, `^rank \d on n\d: MPI_Comm_spawn is not supported by cosched's MPI$`},
		{[]string{ring, "abort"}, `^rank 2 on n\d called MPI_Abort \(exit code 3\)`},
	} {
		id := c.submit(api.JobSpec{Command: tc.cmd, Processors: 3, MPI: api.MPICosched})
		j := waitDone(t, c, id, time.Minute)
		if j.State != api.Failed || !regexp.MustCompile(tc.want).MatchString(j.Reason) {
			t.Errorf("%s: job %s (%s), want FAILED matching %s", strings.Join(tc.cmd[1:], " "), j.State, j.Reason, tc.want)
		}
		t.Logf("%s: %s", tc.cmd[1], j.Reason)
		c.waitGone(id)
	}
}
