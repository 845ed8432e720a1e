package node

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// policyOf is field 41 of a /proc stat line: the scheduling policy.
func policyOf(t *testing.T, stat string) int {
	t.Helper()
	// The command name (field 2) may hold spaces: count after its ")".
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	p, err := strconv.Atoi(fields[41-3])
	if err != nil {
		t.Fatalf("stat %q: %v", stat, err)
	}
	return p
}

// setAllThreads puts every thread of the test process at attr.
func setAllThreads(t *testing.T, attr unix.SchedAttr) {
	t.Helper()
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
			t.Fatalf("thread %d: %v", tid, err)
		}
	}
}

// The agent's real-time priority never reaches what it forks, and an
// agent that inherited a real-time policy it was not given drops it.
func TestRealtimePriorityIsNotInherited(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (SCHED_FIFO)")
	}
	normal := unix.SchedAttr{Size: uint32(unsafe.Sizeof(unix.SchedAttr{})), Policy: unix.SCHED_NORMAL}
	t.Cleanup(func() { setAllThreads(t, normal) })
	if err := setOwnRealtime(1); err != nil {
		t.Fatal(err)
	}
	own, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if p := policyOf(t, string(own)); p != unix.SCHED_RR {
		t.Fatalf("the agent runs at policy %d, want SCHED_RR", p)
	}
	child := func() int {
		out, err := exec.Command("cat", "/proc/self/stat").Output()
		if err != nil {
			t.Fatal(err)
		}
		return policyOf(t, string(out))
	}
	if p := child(); p != unix.SCHED_NORMAL {
		t.Fatalf("a child of a real-time agent runs at policy %d", p)
	}
	if dropped, err := dropInheritedRealtime(); err != nil || dropped {
		t.Fatalf("the agent's own priority counted as inherited: %v %v", dropped, err)
	}
	// Inherited: real-time without reset-on-fork, as a process started by
	// a real-time parent has it.
	setAllThreads(t, unix.SchedAttr{Size: normal.Size, Policy: unix.SCHED_FIFO, Priority: 1})
	if p := child(); p != unix.SCHED_FIFO {
		t.Fatalf("control: without reset-on-fork the child runs at policy %d", p)
	}
	if dropped, err := dropInheritedRealtime(); err != nil || !dropped {
		t.Fatalf("inherited real-time not dropped: %v %v", dropped, err)
	}
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if p := policyOf(t, string(b)); p != unix.SCHED_NORMAL {
		t.Fatalf("after dropping: policy %d", p)
	}
}
