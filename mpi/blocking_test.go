package mpi_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procStat reads a process's state letter and CPU time in clock ticks
// (utime + stime) from /proc/PID/stat.
func procStat(pid int) (state byte, ticks int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return f[0][0], ut + st, nil
}

// A rank waiting in MPI_Recv, MPI_Barrier or MPI_Probe sleeps in the
// kernel (state S, no CPU time), the relay reports it blocked (what bcs
// uses to lend its processor), and stopping and continuing it mid-wait
// (SIGSTOP/SIGCONT, as gang and bcs switching do) loses nothing.
func TestBlockedRankSleepsInTheKernel(t *testing.T) {
	prog := program(t, "mpi/testdata/blocking.c")
	for _, mode := range []string{"immediate", "bcs"} {
		t.Run(mode, func(t *testing.T) {
			c := newCluster(t, 2, mode == "bcs")
			pids := make(chan int, 1)
			c.started = func(rank, pid int) {
				if rank == 1 {
					pids <- pid
				}
			}
			type sample struct {
				state   byte
				ticks   int64
				err     error
				stopped byte
			}
			done := make(chan sample, 1)
			go func() {
				pid := <-pids
				// sample once the relay says rank 1 waits in MPI_Recv (rank 0 sends after 1.5 s)
				for deadline := time.Now().Add(20 * time.Second); !c.sawBlocked("1/1:true") && time.Now().Before(deadline); {
					time.Sleep(2 * time.Millisecond)
				}
				_, t0, err := procStat(pid)
				if err != nil {
					done <- sample{err: err}
					return
				}
				syscall.Kill(pid, syscall.SIGSTOP)
				time.Sleep(100 * time.Millisecond)
				stopped, _, _ := procStat(pid)
				syscall.Kill(pid, syscall.SIGCONT)
				time.Sleep(300 * time.Millisecond)
				state, t1, err := procStat(pid)
				done <- sample{state: state, ticks: t1 - t0, err: err, stopped: stopped}
			}()
			res := c.run(t, prog, []int{0, 1}, 60*time.Second, "1500")
			expectPass(t, "blocking.c", res)
			s := <-done
			switch {
			case s.err != nil:
				t.Errorf("reading rank 1's /proc: %v", s.err)
			case s.state != 'S':
				t.Errorf("rank 1 waiting in MPI_Recv is in state %c, want S (asleep in the kernel)", s.state)
			case s.stopped != 'T':
				t.Errorf("rank 1 after SIGSTOP is in state %c, want T", s.stopped)
			case s.ticks > 10:
				t.Errorf("rank 1 used %d clock ticks of CPU in 0.4 s of waiting: it spins", s.ticks)
			}
			c.blockedMu.Lock()
			blocked := slices.Clone(c.blocked)
			c.blockedMu.Unlock()
			if !slices.Contains(blocked, "1/1:true") || !slices.Contains(blocked, "1/1:false") {
				t.Errorf("the relay never saw rank 1 blocked and unblocked: %v", blocked)
			}
		})
	}
}
