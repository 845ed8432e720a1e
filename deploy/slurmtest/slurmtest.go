// Package slurmtest starts a real Slurm on this host for tests: a private
// munged, slurmctld and one slurmd per node (n1, n2, …), all on loopback,
// configured by a slurm.conf generated in a temporary directory. Tests run
// sbatch, srun, squeue and scontrol against it with the cluster's
// environment (SLURM_CONF).
//
// Every node is a `slurmd -N NAME` on this host with a port of its own;
// SlurmdParameters=config_overrides lets a node offer more CPUs than the
// host has. Nothing is read from or written to /etc, /run or /var: the
// munge key, its socket, Slurm's state, spool, logs and pid files all live
// in the cluster's directory, and the ports are free ones chosen at start.
// Processes are tracked by parentage (proctrack/linuxproc), tasks are not
// bound (task/none): no cgroup, no systemd; Options.Extra and CgroupConf
// change that (ProctrackType=proctrack/cgroup).
//
// It needs Debian's slurmctld, slurmd, slurm-client and munge packages and
// root (slurmd runs jobs as their users); Available says what is missing.
// Stop cancels the jobs, stops the daemons and kills, as a last resort,
// every process that carries the cluster's SLURM_CONF in its environment:
// the daemons, the jobs' slurmstepd and what the jobs started.
package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cosched/cosched/internal/stableport"
)

// binaries are the programs a cluster needs, on PATH or in /usr/sbin.
func binaries() []string {
	return []string{"munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scontrol", "sinfo", "scancel"}
}

// Options shape the cluster.
type Options struct {
	Nodes int // slurmd daemons, named n1…nN (2 if 0)
	CPUs  int // CPUs each node offers (4 if 0), whatever the host has
	// Extra lines appended to slurm.conf (they override earlier ones).
	Extra []string
	// CgroupConf, if set, is written as cgroup.conf beside slurm.conf
	// (for ProctrackType=proctrack/cgroup or TaskPlugin=task/cgroup in
	// Extra).
	CgroupConf string
}

// Cluster is a running Slurm. Its methods may be called from any goroutine;
// Stop must be called once, by its owner.
type Cluster struct {
	Dir   string   // the cluster's files: slurm.conf, munge/, state/, spool/, log/
	Conf  string   // the slurm.conf path (SLURM_CONF)
	Nodes []string // node names, n1…

	daemons []*daemon
	path    string // PATH with /usr/sbin, for the daemons and clients
}

// Available returns nil if this host can run a cluster, else an error
// naming what is missing (for a test's Skip).
func Available() error {
	var missing []string
	for _, b := range binaries() {
		if _, err := lookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("slurmtest: %s not installed (apt-get install slurmctld slurmd slurm-client munge)", strings.Join(missing, ", "))
	}
	if os.Geteuid() != 0 {
		return errors.New("slurmtest: a real Slurm needs root (slurmd runs jobs as their users)")
	}
	return nil
}

func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("slurmtest: %s not found", name)
	}
	return p, nil
}

// Start starts a cluster and waits, within ctx, until every node is idle.
// On error nothing it started is left running, and the error carries the
// daemons' logs.
func Start(ctx context.Context, opt Options) (*Cluster, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if opt.Nodes <= 0 {
		opt.Nodes = 2
	}
	if opt.CPUs <= 0 {
		opt.CPUs = 4
	}
	dir, err := os.MkdirTemp("", "slurmtest-")
	if err != nil {
		return nil, fmt.Errorf("slurmtest: %w", err)
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), path: "/usr/sbin:/sbin:" + os.Getenv("PATH")}
	for i := 1; i <= opt.Nodes; i++ {
		c.Nodes = append(c.Nodes, "n"+strconv.Itoa(i))
	}
	if err := c.start(ctx, opt); err != nil {
		err = fmt.Errorf("slurmtest: %w\n%s", err, c.Logs())
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, opt Options) error {
	dirs := []string{"munge", "state", "log"}
	for _, n := range c.Nodes {
		dirs = append(dirs, filepath.Join("spool", n))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(c.Dir, d), 0o700); err != nil {
			return err
		}
	}
	// The directory must be traversable for munge's socket check.
	if err := os.Chmod(c.Dir, 0o755); err != nil {
		return err
	}
	key := make([]byte, 1024)
	rand.Read(key)
	keyFile := filepath.Join(c.Dir, "munge", "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		return err
	}
	sock := filepath.Join(c.Dir, "munge", "munge.socket")
	m := filepath.Join(c.Dir, "munge")
	if err := c.spawn("munged", "munged", "--foreground", "--force", "--socket="+sock, "--key-file="+keyFile,
		"--pid-file="+filepath.Join(m, "munged.pid"), "--seed-file="+filepath.Join(m, "munged.seed"),
		"--log-file="+filepath.Join(c.Dir, "log", "munged.log")); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "munged's socket", func() error { _, err := os.Stat(sock); return err }); err != nil {
		return err
	}

	// Below the kernel's ephemeral range (stableport): the daemons bind
	// them a moment after they are chosen, and a port from that range
	// may be taken meanwhile by any connection or listener on the host
	// (a CI run saw slurmd fail with "Address already in use").
	ports, err := stableport.Pick(2 + len(c.Nodes))
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.Conf, []byte(c.config(opt, sock, ports)), 0o644); err != nil {
		return err
	}
	if opt.CgroupConf != "" {
		if err := os.WriteFile(filepath.Join(c.Dir, "cgroup.conf"), []byte(opt.CgroupConf), 0o644); err != nil {
			return err
		}
	}
	if err := c.spawn("slurmctld", "slurmctld", "-D"); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "slurmctld", func() error { _, err := c.Run(ctx, "scontrol", "ping"); return err }); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := c.spawn("slurmd-"+n, "slurmd", "-D", "-N", n); err != nil {
			return err
		}
	}
	return c.waitFor(ctx, "every node idle", func() error {
		out, err := c.Run(ctx, "sinfo", "-h", "-N", "-o", "%N %t")
		if err != nil {
			return err
		}
		idle := 0
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[1] == "idle" {
				idle++
			}
		}
		if idle != len(c.Nodes) {
			return fmt.Errorf("sinfo: %s", strings.TrimSpace(out))
		}
		return nil
	})
}

// config is the generated slurm.conf.
func (c *Cluster) config(opt Options, sock string, ports []int) string {
	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	line("# generated by deploy/slurmtest")
	line("ClusterName=slurmtest")
	line("SlurmctldHost=localhost")
	line("SlurmctldPort=%d", ports[0])
	line("SlurmdPort=%d", ports[1])
	line("SlurmUser=root")
	line("SlurmdUser=root")
	line("AuthType=auth/munge")
	line("CredType=cred/munge")
	line("AuthInfo=socket=%s", sock)
	line("StateSaveLocation=%s", filepath.Join(c.Dir, "state"))
	line("SlurmdSpoolDir=%s", filepath.Join(c.Dir, "spool", "%n"))
	line("SlurmctldPidFile=%s", filepath.Join(c.Dir, "slurmctld.pid"))
	line("SlurmdPidFile=%s", filepath.Join(c.Dir, "slurmd-%n.pid"))
	line("SlurmctldLogFile=%s", filepath.Join(c.Dir, "log", "slurmctld.log"))
	line("SlurmdLogFile=%s", filepath.Join(c.Dir, "log", "slurmd-%n.log"))
	line("ProctrackType=proctrack/linuxproc")
	line("TaskPlugin=task/none")
	line("SwitchType=switch/none")
	line("MpiDefault=none")
	line("SelectType=select/cons_tres")
	line("SelectTypeParameters=CR_CPU")
	line("SlurmdParameters=config_overrides")
	line("SchedulerType=sched/backfill")
	// Schedule at once and often: tests wait for jobs to start.
	line("SchedulerParameters=sched_interval=1,bf_interval=1")
	line("ReturnToService=2")
	line("JobAcctGatherType=jobacct_gather/none")
	line("AccountingStorageType=accounting_storage/none")
	line("JobCompType=jobcomp/none")
	// Finished jobs stay visible to scontrol for the tests' checks.
	line("MinJobAge=600")
	// A job past its limit or cancelled gets SIGTERM, then SIGKILL 2 s later.
	line("KillWait=2")
	line("OverTimeLimit=0")
	line("InactiveLimit=0")
	line("SlurmdTimeout=60")
	line("MessageTimeout=20")
	for i, n := range c.Nodes {
		line("NodeName=%s NodeHostname=localhost NodeAddr=127.0.0.1 Port=%d CPUs=%d State=UNKNOWN", n, ports[2+i], opt.CPUs)
	}
	line("PartitionName=debug Nodes=%s Default=YES MaxTime=INFINITE State=UP", strings.Join(c.Nodes, ","))
	for _, l := range opt.Extra {
		line("%s", l)
	}
	return b.String()
}

// Env is the environment clients and jobs need: SLURM_CONF and a PATH with
// /usr/sbin.
func (c *Cluster) Env() []string {
	return []string{"SLURM_CONF=" + c.Conf, "PATH=" + c.path}
}

// Command returns name (sbatch, squeue, a script…) with the cluster's
// environment added to this process's.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	if p, err := lookPath(name); err == nil {
		cmd.Path, cmd.Err = p, nil
	}
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Run runs a client command and returns its standard output; its error
// includes the standard error.
func (c *Cluster) Run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := c.Command(ctx, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// JobState returns a job's state (PENDING, RUNNING, COMPLETED, CANCELLED,
// TIMEOUT, FAILED…) and the reason scontrol gives.
func (c *Cluster) JobState(ctx context.Context, id string) (state, reason string, err error) {
	out, err := c.Run(ctx, "scontrol", "-o", "show", "job", id)
	if err != nil {
		return "", "", err
	}
	return field(out, "JobState"), field(out, "Reason"), nil
}

// field returns KEY's value in scontrol's one-line KEY=VALUE output.
func field(out, key string) string {
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// WaitJob waits, within ctx, until every job of id (an array's tasks
// included) has ended, and returns their final states (one per task).
// The error, when ctx ends first, carries the job's state and the daemons'
// logs.
func (c *Cluster) WaitJob(ctx context.Context, id string) ([]string, error) {
	var states []string
	err := c.waitFor(ctx, "job "+id+" to end", func() error {
		out, err := c.Run(ctx, "scontrol", "-o", "show", "job", id)
		if err != nil {
			return err
		}
		states = states[:0]
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			s := field(l, "JobState")
			switch s {
			case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING":
				return fmt.Errorf("%s (reason %s)", s, field(l, "Reason"))
			}
			states = append(states, s)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("slurmtest: %w\n%s", err, c.Logs())
	}
	return states, nil
}

// waitFor polls check until it returns nil or ctx ends; the error names
// what was awaited and check's last error.
func (c *Cluster) waitFor(ctx context.Context, what string, check func() error) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		for _, d := range c.daemons {
			if d.exited() {
				return fmt.Errorf("waiting for %s: %s exited", what, d.name)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Logs returns the tail of every daemon's log, for a failure message.
func (c *Cluster) Logs() string {
	files, _ := filepath.Glob(filepath.Join(c.Dir, "log", "*"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 25 {
			lines = lines[len(lines)-25:]
		}
		fmt.Fprintf(&b, "==> %s <==\n%s\n", f, strings.Join(lines, "\n"))
	}
	return b.String()
}

// JobProcesses lists the live processes of job id (one of an array's
// tasks, or a job): its slurmstepd and what its steps started that kept
// the environment Slurm gave them (SLURM_JOB_ID).
func (c *Cluster) JobProcesses(id string) []int {
	step := "slurmstepd: [" + id + "."
	envMark := []byte("\x00SLURM_JOB_ID=" + id + "\x00")
	var pids []int
	for _, pid := range c.marked() {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if strings.HasPrefix(string(cmdline), step) || bytes.Contains(append([]byte{0}, env...), envMark) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// marked lists the live processes whose environment holds SLURM_CONF=c.Conf.
func (c *Cluster) marked() []int {
	entries, _ := os.ReadDir("/proc")
	mark := []byte("SLURM_CONF=" + c.Conf + "\x00")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, mark) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// Stop cancels every job, stops the daemons (SIGTERM, then SIGKILL after
// 10 s), kills what still carries the cluster's environment and removes
// its directory. It is bounded: about 20 s at worst.
func (c *Cluster) Stop() {
	if len(c.daemons) > 1 { // slurmctld was started: let Slurm end the jobs
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c.Run(ctx, "scancel", "--full", "--quiet", "--user=root")
		c.waitFor(ctx, "no job", func() error {
			out, err := c.Run(ctx, "squeue", "-h", "-t", "PD,R,CG,CF,S", "-o", "%i")
			if err == nil && strings.TrimSpace(out) != "" {
				err = errors.New(out)
			}
			return err
		})
		cancel()
	}
	// slurmd before slurmctld before munged.
	for i := len(c.daemons) - 1; i >= 0; i-- {
		c.daemons[i].stop()
	}
	for _, pid := range c.marked() {
		if pid != os.Getpid() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	os.RemoveAll(c.Dir)
}

// daemon is one foreground daemon this package started; a goroutine waits
// for it and closes done.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func (c *Cluster) spawn(name, prog string, args ...string) error {
	p, err := lookPath(prog)
	if err != nil {
		return err
	}
	out, err := os.Create(filepath.Join(c.Dir, "log", name+".out"))
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(p, args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own group (a terminal's ^C goes to the test only), and killed
	// if the test process dies without Stop (a go test timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(d.done) }()
	c.daemons = append(c.daemons, d)
	return nil
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

func (d *daemon) stop() {
	if d.exited() {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return
	case <-time.After(10 * time.Second):
	}
	d.cmd.Process.Kill()
	<-d.done
}
