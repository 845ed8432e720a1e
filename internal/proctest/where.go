package proctest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Where says where process pid is, for a test about to kill a rank that
// outlived its job's time limit, so that a hang seen once in a CI run is
// explained by its log: the process's state, its kernel wait channel and,
// when gdb is installed (.ci/run installs it), its stack and the state of
// cosched's MPI library (built with -g): its channels, the receives it
// keeps and its stash. For another program those lines say "No symbol".
// gdb stops the process while it reads it.
func Where(pid int) string {
	wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
	out := fmt.Sprintf("pid %d, state %c, wchan %s\n", pid, State(pid), wchan)
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		return out + "(no gdb: no stack)\n"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, _ := exec.CommandContext(ctx, gdb, "-p", fmt.Sprint(pid), "-batch", "-nx",
		"-ex", "bt 12", "-ex", "p G.rank", "-ex", "p revoked", "-ex", "p npeers", "-ex", "p *peers@npeers",
		"-ex", "p nlposts", "-ex", "p *lposts@nlposts", "-ex", "p G.stash_head", "-ex", "p G.bye").CombinedOutput()
	var kept []string
	for _, l := range strings.Split(string(b), "\n") {
		// the stack's frames, the values printed and their continuations
		if strings.HasPrefix(l, "#") || strings.HasPrefix(l, "$") || strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "No symbol") {
			kept = append(kept, l)
		}
	}
	return out + strings.Join(kept, "\n")
}
