package mono

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestNowIsMonotonicAndSharedAcrossProcesses(t *testing.T) {
	a := Now()
	if os.Getenv("MONO_CHILD") == "1" {
		os.Stdout.WriteString(strconv.FormatInt(a, 10) + "\n")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNowIsMonotonicAndSharedAcrossProcesses$")
	cmd.Env = append(os.Environ(), "MONO_CHILD=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	b := Now()
	child, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	if err != nil {
		t.Fatalf("child printed %q", out)
	}
	// The child read the clock after a and before b: one clock for both.
	if !(a <= child && child <= b) {
		t.Fatalf("parent %d, child %d, parent %d: not one clock", a, child, b)
	}
}
