package shim

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ExitRecord is what the keeper writes when its program has ended
// (JOB.RANK.exit): the program's status and resource use, which the
// keeper's own exit status does not carry.
type ExitRecord struct {
	Code    int       `json:"code"`
	Signal  string    `json:"signal,omitempty"`
	CPUTime int64     `json:"cpu_ns"`
	MaxRSS  int64     `json:"maxrss"`
	Ended   time.Time `json:"ended"`
}

// keeperMain is the keeper's life: it stops itself (a Stopped rank) until
// the agent continues it, forks the program into its own process group
// (the keeper is the group's leader), waits for it and writes its exit
// record. It survives the signals a group receives that would kill it by
// default (SIGTERM reaches the program, not the keeper's record), and when
// its agent dies it stops its group if asked to (time-shared ranks must
// not run outside their slices while no agent switches them). The program
// gets SIGKILL if the keeper dies (Pdeathsig): a rank never runs without
// its keeper.
func keeperMain(args []string) error {
	if len(args) < 6 || args[4] != "--" {
		return fmt.Errorf("usage: %s EXITFILE NFDS stopped|running AGENTPID -- program [args...] (got %q)", KeeperArg, args)
	}
	exitPath, stopped := args[0], args[2] == "stopped"
	nfds, err := strconv.Atoi(args[1])
	if err != nil || nfds < 3 {
		return fmt.Errorf("keeper: descriptors %q: want 3 or more", args[1])
	}
	agent, err := strconv.Atoi(args[3])
	if err != nil || agent <= 0 {
		return fmt.Errorf("keeper: agent pid %q: want a pid", args[3])
	}
	argv := args[5:]
	path, err := exec.LookPath(argv[0])
	if err != nil && !errors.Is(err, exec.ErrDot) {
		return err
	}
	sigs := make(chan os.Signal, 8)
	// Caught, not ignored: an ignored signal would stay ignored in the
	// program after execve; a caught one is reset to its default.
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2,
		unix.SIGALRM, unix.SIGPIPE, unix.SIGVTALRM, unix.SIGPROF, unix.SIGXCPU, unix.SIGXFSZ)
	go func() {
		for s := range sigs {
			// SIGUSR2 is also the agent's death (Pdeathsig).
			if s == unix.SIGUSR2 && os.Getppid() != agent && stopped {
				_ = unix.Kill(0, unix.SIGSTOP) // the whole group, keeper included
			}
		}
	}()
	// The agent's death is SIGUSR2 only from here on: armed at the fork,
	// it would kill a keeper whose runtime had not caught it yet. An
	// agent that died before this point leaves nothing undone: the
	// keeper has not run its program yet, and a time-shared one stops
	// itself below until an agent continues it.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGUSR2), 0, 0, 0); err != nil {
		return fmt.Errorf("keeper: parent-death signal: %w", err)
	}

	runtime.LockOSThread() // never unlocked: the program's Pdeathsig is this thread's
	if stopped {
		if err := unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGSTOP); err != nil {
			return fmt.Errorf("stopping itself: %w", err)
		}
	}
	fds := make([]uintptr, nfds)
	for i := range fds {
		fds[i] = uintptr(i)
	}
	env := os.Environ()
	var relay *pmiRelay
	progPMI := -1
	if spec := os.Getenv(EnvPMIResume); spec != "" && nfds > 3 {
		// The keeper holds the PMI connection (descriptor 3) so that it
		// outlives the agent; the program talks to the keeper.
		if relay, progPMI, err = newPMIRelay(spec, 3); err != nil {
			return err
		}
		fds[3] = uintptr(progPMI)
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, EnvPMIResume+"=") })
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: env, Files: fds,
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}})
	if err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	for fd := 3; fd < nfds; fd++ {
		if relay == nil || fd != 3 {
			unix.Close(fd) // a PMI socket: its server sees the program's end, not the keeper's
		}
	}
	if relay != nil {
		unix.Close(progPMI)
		relay.start()
	}
	var ws unix.WaitStatus
	var ru unix.Rusage
	for {
		_, err = unix.Wait4(pid, &ws, 0, &ru)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("waiting for pid %d: %w", pid, err)
	}
	rec := Describe(ws, &ru)
	rec.Ended = time.Now()
	if err := writeExitRecord(exitPath, rec); err != nil {
		// The agent, if it waits for this keeper, still learns the
		// status from the keeper's own: mirror it.
		fmt.Fprintf(os.Stderr, "cosched rank keeper: exit record: %v\n", err)
		if ws.Signaled() {
			signal.Reset(ws.Signal())
			_ = unix.Kill(os.Getpid(), ws.Signal())
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(ws.ExitStatus())
	}
	return nil
}

// writeExitRecord writes the record into the file the manager made for it
// (owned by the rank's user, who may not write in the directory).
// Written once, in one write, and read only after the keeper exited.
func writeExitRecord(path string, rec ExitRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Describe is the status and resource use of a process that ended with
// ws and ru (Ended left zero): Code is its exit status, or -1 and Signal
// names the signal that terminated it.
func Describe(ws unix.WaitStatus, ru *unix.Rusage) ExitRecord {
	var r ExitRecord
	switch {
	case ws.Exited():
		r.Code = ws.ExitStatus()
	case ws.Signaled():
		r.Code = -1
		r.Signal = ws.Signal().String()
		if ws.CoreDump() {
			r.Signal += " (core dumped)"
		}
	}
	r.CPUTime = ru.Utime.Nano() + ru.Stime.Nano()
	r.MaxRSS = ru.Maxrss * 1024 // Linux reports KiB
	return r
}
