package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A rank's start-up cost and its keeper's memory, by the binary it starts
// through: `cosched-full __rank-exec` (the agent's own, as before
// lib/cosched/cosched-rank existed and still when it is absent) and
// cosched-rank, against the Go hello-world binary run alternately in the
// same benchmark (ratios; see compare).
//
//	go test ./cmd/cosched -run '^$' -bench 'RankShim|KeeperMemory' -benchtime 30x

// buildRankShim builds cmd/cosched-rank into a temporary directory.
func buildRankShim(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "cosched-rank")
	if out, err := exec.Command("go", "build", "-o", bin, "../cosched-rank").CombinedOutput(); err != nil {
		b.Fatalf("build cosched-rank: %v\n%s", err, out)
	}
	return bin
}

// shims are the two ways an agent starts a rank, for a cosched binary and
// a cosched-rank binary.
func shims(cosched, rankShim string) []struct {
	name string
	argv []string
} {
	return []struct {
		name string
		argv []string
	}{{"cosched", []string{cosched, "__rank-exec"}}, {"cosched-rank", []string{rankShim}}}
}

// BenchmarkWholeProcessRankShim is a rank's start as the agent does it:
// the shim started, stopped by itself, continued, and the program (true)
// run to its end (shim); and a keeper running the program and writing its
// exit record (keeper).
func BenchmarkWholeProcessRankShim(b *testing.B) {
	cosched, hello := buildBinaries(b)
	rankShim := buildRankShim(b)
	for _, s := range shims(fullBinary(cosched), rankShim) {
		b.Run("shim/"+s.name, func(b *testing.B) {
			compareRuns(b, "hello", func() (time.Duration, time.Duration) { return runTimed(b, hello) },
				s.name, func() (time.Duration, time.Duration) { return runShim(b, s.argv) })
		})
		b.Run("keeper/"+s.name, func(b *testing.B) {
			exit := filepath.Join(b.TempDir(), "exit")
			keeper := append(append([]string{}, s.argv...), "--keep", exit, "3", "running", strconv.Itoa(os.Getpid()), "--", "true")
			compare(b, "hello", []string{hello}, s.name, keeper)
		})
	}
}

// runShim runs shim -- true as the rank manager does: it waits for the
// shim to stop itself, continues it, and waits for the program's end.
func runShim(b *testing.B, shim []string) (wall, cpu time.Duration) {
	b.Helper()
	cmd := exec.Command(shim[0], append(append([]string{}, shim[1:]...), "--", "true")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EINTR) {
			cmd.Process.Kill()
			cmd.Wait()
			b.Fatalf("waitid %v: %v", shim, err)
		}
	}
	const cldStopped = 5
	if info.Code != cldStopped {
		cmd.Wait()
		b.Fatalf("%v did not stop itself: %s", shim, stderr.Bytes())
	}
	if err := cmd.Process.Signal(unix.SIGCONT); err != nil {
		b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%v: %v\n%s", shim, err, stderr.Bytes())
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkKeeperMemory is the memory of a keeper waiting for its
// program (sleep), from /proc/PID/smaps_rollup, through each binary: the
// resident set (mostly the binary's text, which keepers of the same binary
// share), its anonymous part (heap and stacks: each keeper's own, whatever
// the number of keepers) and the pages no other process maps (private:
// with one keeper, its text too).
func BenchmarkKeeperMemory(b *testing.B) {
	cosched, _ := buildBinaries(b)
	rankShim := buildRankShim(b)
	for _, s := range shims(fullBinary(cosched), rankShim) {
		b.Run(s.name, func(b *testing.B) {
			var rss, anon, private int64
			for range b.N {
				m := keeperMemory(b, s.argv)
				rss, anon, private = rss+m["Rss"], anon+m["Anonymous"], private+m["Private_Clean"]+m["Private_Dirty"]
			}
			n := int64(b.N)
			b.ReportMetric(float64(rss/n), "rss-kB")
			b.ReportMetric(float64(anon/n), "anon-kB")
			b.ReportMetric(float64(private/n), "private-kB")
		})
	}
}

// keeperMemory starts a keeper of sleep through shim, waits until it has
// forked the program, reads its smaps_rollup (kB by field) and kills it
// (the program dies with it: Pdeathsig).
func keeperMemory(b *testing.B, shim []string) map[string]int64 {
	b.Helper()
	exit := filepath.Join(b.TempDir(), "exit")
	argv := append(append([]string{}, shim[1:]...), "--keep", exit, "3", "running", strconv.Itoa(os.Getpid()), "--", "sleep", "60")
	cmd := exec.Command(shim[0], argv...)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	pid := cmd.Process.Pid
	deadline := time.Now().Add(time.Minute)
	for !hasChild(pid) {
		if time.Now().After(deadline) {
			b.Fatalf("keeper %v: no program after a minute", shim)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // its last start-up allocations
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	kB := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[2] == "kB" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			kB[strings.TrimSuffix(f[0], ":")] = v
		}
	}
	if kB["Rss"] == 0 {
		b.Fatalf("keeper %v: no Rss in its smaps_rollup", shim)
	}
	return kB
}

// hasChild reports whether any thread of pid has forked a child.
func hasChild(pid int) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		if b, err := os.ReadFile(t); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return true
		}
	}
	return false
}
