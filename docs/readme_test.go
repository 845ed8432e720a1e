package docs_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// commandBudget is the time a README command gets when its block names
// no timeout: the tour's commands are small variants that take seconds.
const commandBudget = 30 * time.Second

// block is a fenced code block of a Markdown file.
type block struct {
	line   int    // of the opening fence, from 1
	lang   string // the fence's info string
	marker string // the text of a `<!-- test: … -->` comment on the line before, "" if none
	body   string
}

// readBlocks returns the fenced code blocks of the Markdown file at path.
func readBlocks(path string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks []block
		cur    *block
		body   strings.Builder
		prev   string // the last non-blank line outside a block
		n      int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &block{line: n, lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
			if m, ok := strings.CutPrefix(strings.TrimSpace(prev), "<!-- test:"); ok {
				if m, ok = strings.CutSuffix(m, "-->"); !ok {
					return nil, fmt.Errorf("%s:%d: test marker without its closing -->", path, n-1)
				}
				cur.marker = strings.TrimSpace(m)
			}
			body.Reset()
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.body = body.String()
			blocks = append(blocks, *cur)
			cur, prev = nil, ""
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		case strings.TrimSpace(line) != "":
			prev = line
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: code block never closed", path, cur.line)
	}
	return blocks, nil
}

// plan is how a block is tested, from its marker.
type plan struct {
	kind    string         // "run", "file" or "skip"
	timeout time.Duration  // run: each command's budget (0: commandBudget)
	expect  *regexp.Regexp // run: what its standard output must match
	file    string         // file: where the block goes, relative to the work directory
}

// parsePlan reads a marker: `run [timeout=D] [expect=REGEXP]` (D is each
// command's budget; expect takes the rest of the marker), `file=PATH` or
// `skip (reason)`.
func parsePlan(marker string) (plan, error) {
	switch {
	case marker == "":
		return plan{}, errors.New("no <!-- test: run | file=PATH | skip (reason) --> marker on the line before")
	case strings.HasPrefix(marker, "skip"):
		if !strings.Contains(marker, "(") {
			return plan{}, fmt.Errorf("%q: say why in parentheses: skip (why)", marker)
		}
		return plan{kind: "skip"}, nil
	case strings.HasPrefix(marker, "file="):
		p := strings.TrimPrefix(marker, "file=")
		if p == "" || filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
			return plan{}, fmt.Errorf("%q: want a relative path inside the work directory", marker)
		}
		return plan{kind: "file", file: p}, nil
	}
	rest, ok := strings.CutPrefix(marker, "run")
	if !ok {
		return plan{}, fmt.Errorf("%q: want run, file=PATH or skip (reason)", marker)
	}
	pl := plan{kind: "run"}
	for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(rest) {
		if re, ok := strings.CutPrefix(rest, "expect="); ok {
			var err error
			if pl.expect, err = regexp.Compile(re); err != nil {
				return plan{}, fmt.Errorf("%q: expect: %v", marker, err)
			}
			break
		}
		word, tail, _ := strings.Cut(rest, " ")
		d, ok := strings.CutPrefix(word, "timeout=")
		if !ok {
			return plan{}, fmt.Errorf("%q: unknown option %q", marker, word)
		}
		var err error
		if pl.timeout, err = time.ParseDuration(d); err != nil || pl.timeout <= 0 {
			return plan{}, fmt.Errorf("%q: timeout: want a positive duration", marker)
		}
		rest = tail
	}
	return pl, nil
}

// commands splits a block into its shell commands: its non-blank lines
// that are not comments, each with the lines it continues with a
// trailing backslash.
func commands(body string) []string {
	var cmds []string
	cur := ""
	for _, l := range strings.Split(body, "\n") {
		if cur == "" && (strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#")) {
			continue
		}
		cur += l
		if strings.HasSuffix(strings.TrimSpace(l), "\\") {
			cur += "\n"
			continue
		}
		cmds = append(cmds, cur)
		cur = ""
	}
	if cur != "" {
		cmds = append(cmds, cur)
	}
	return cmds
}

// makeTargets reports whether every command of a block runs make: the
// README's first block (make demo, make test) needs no marker, since the
// suite is what make test runs and the demo takes minutes.
func makeTargets(body string) bool {
	cmds := commands(body)
	for _, c := range cmds {
		if !strings.HasPrefix(c, "make ") {
			return false
		}
	}
	return len(cmds) > 0
}

func TestParsePlan(t *testing.T) {
	for _, tc := range []struct {
		marker, want string
	}{
		{"run", "run 0s <nil>"},
		{"run timeout=90s", "run 1m30s <nil>"},
		{"run timeout=2m expect=^\\d+ +ring +CD", "run 2m0s ^\\d+ +ring +CD"},
		{"file=ring/main.go", "file ring/main.go"},
		{"skip (needs ../shared)", "skip"},
		{"", "error"},
		{"skip", "error"},
		{"file=../x", "error"},
		{"file=/etc/passwd", "error"},
		{"run timeout=0s", "error"},
		{"run fast", "error"},
		{"walk", "error"},
	} {
		pl, err := parsePlan(tc.marker)
		got := "error"
		switch {
		case err != nil:
		case pl.kind == "run" && pl.expect != nil:
			got = fmt.Sprintf("run %v %s", pl.timeout, pl.expect)
		case pl.kind == "run":
			got = fmt.Sprintf("run %v <nil>", pl.timeout)
		case pl.kind == "file":
			got = "file " + pl.file
		default:
			got = pl.kind
		}
		if got != tc.want {
			t.Errorf("parsePlan(%q) = %s (err %v), want %s", tc.marker, got, err, tc.want)
		}
	}
	got := commands("a \\\n  b\n# c\n\nd # e\n")
	if want := []string{"a \\\n  b", "d # e"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("commands: %q, want %q", got, want)
	}
}

// TestReadmeCommands runs the README's blocks as a reader would, in order:
// one work directory, one state directory, cosched built from this tree
// first on PATH and COSCHED_SRC naming the clone. The README's tour starts
// a cluster and stops it; the test checks no agent of it is left.
func TestReadmeCommands(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the README's cluster needs Linux")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	blocks, err := readBlocks("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	// As make build does: the light binary linked statically.
	light := exec.Command("go", "build", "-o", bin+"/", "../cmd/cosched")
	light.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := light.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build -o bin/ ./cmd/cosched: %v\n%s", err, out)
	}
	if out, err := exec.Command("go", "build", "-o", bin+"/", "../cmd/cosched-full").CombinedOutput(); err != nil {
		t.Fatalf("go build -o bin/ ./cmd/cosched-full: %v\n%s", err, out)
	}
	// make build's layout: the agents start ranks through lib/cosched/cosched-rank.
	if out, err := exec.Command("go", "build", "-o", filepath.Join(work, "lib", "cosched", "cosched-rank"), "../cmd/cosched-rank").CombinedOutput(); err != nil {
		t.Fatalf("go build -o lib/cosched/cosched-rank ./cmd/cosched-rank: %v\n%s", err, out)
	}
	state := filepath.Join(work, "state")
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"COSCHED_STATE_DIR="+state, "COSCHED_SRC="+src, "COSCHED_ADDR=")
	t.Cleanup(func() { stopLeftovers(t, bin, env, state) })

	ran := 0
	for _, b := range blocks {
		if b.lang != "sh" && b.lang != "go" {
			continue
		}
		if b.marker == "" && makeTargets(b.body) {
			continue // make demo, make test: the suite is what runs this test
		}
		pl, err := parsePlan(b.marker)
		if err != nil {
			t.Fatalf("README.md:%d: ```%s block: %v", b.line, b.lang, err)
		}
		switch {
		case pl.kind == "skip":
			continue
		case pl.kind == "file":
			path := filepath.Join(work, pl.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(b.body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		case b.lang != "sh":
			t.Fatalf("README.md:%d: only sh blocks run; a ```%s block is a file=PATH or a skip", b.line, b.lang)
		}
		budget := pl.timeout
		if budget == 0 {
			budget = commandBudget
		}
		cmds := commands(b.body)
		start := time.Now()
		out, err := runBlock(cmds, work, env, budget)
		t.Logf("README.md:%d: %d commands in %v", b.line, len(cmds), time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Fatalf("README.md:%d: %v\n--- block\n%s--- output\n%s", b.line, err, b.body, out)
		}
		if pl.expect != nil && !pl.expect.MatchString(out) {
			t.Fatalf("README.md:%d: output does not match %q\n--- block\n%s--- output\n%s", b.line, pl.expect, b.body, out)
		}
		ran++
	}
	if ran == 0 {
		t.Fatal("README.md has no block marked run")
	}
	if pids := agentsUnder(state); len(pids) > 0 {
		t.Errorf("the README's blocks left agents running (pids %v): its tour must end with cosched cluster down", pids)
	}
}

// runBlock runs cmds one after another in one sh -e, so that variables
// and cd carry over as in a terminal, each with stdin from /dev/null and
// at most budget to finish. It returns their combined output. A command
// that fails or outlives its budget ends the block; the shell's whole
// process group is killed on the way out.
func runBlock(cmds []string, dir string, env []string, budget time.Duration) (string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", err
	}
	defer r.Close()
	sh := exec.Command("sh", "-e")
	sh.Dir, sh.Env, sh.Stdout, sh.Stderr = dir, env, w, w
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	script, err := sh.StdinPipe()
	if err != nil {
		w.Close()
		return "", err
	}
	err = sh.Start()
	w.Close()
	if err != nil {
		return "", err
	}
	// The reader is owned by runBlock: it ends at the pipe's EOF, or when
	// the deferred Close of r interrupts it, and the deferred drain below
	// waits for it.
	chunks := make(chan []byte)
	go func() {
		defer close(chunks)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				chunks <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}()
	exited := false
	defer func() {
		if !exited {
			syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
		}
		script.Close()
		r.Close()
		for range chunks {
		}
		if !exited {
			sh.Wait()
		}
	}()
	var out strings.Builder
	for i, c := range cmds {
		marker := fmt.Sprintf("__readme_command_%d_done__", i)
		if _, err := fmt.Fprintf(script, "{ %s\n} </dev/null\necho %s\n", c, marker); err != nil {
			return out.String(), fmt.Errorf("`%s`: the shell is gone: %v", c, err)
		}
		deadline := time.NewTimer(budget)
		for !strings.Contains(out.String(), marker) {
			select {
			case b, ok := <-chunks:
				if !ok {
					deadline.Stop()
					exited = true
					return out.String(), fmt.Errorf("`%s` failed: %v", c, sh.Wait())
				}
				out.Write(b)
			case <-deadline.C:
				return out.String(), fmt.Errorf("`%s` still running after its budget of %v (killed)", c, budget)
			}
		}
		deadline.Stop()
		s := strings.Replace(out.String(), marker+"\n", "", 1)
		out.Reset()
		out.WriteString(s)
	}
	script.Close()
	for b := range chunks {
		out.Write(b)
	}
	exited = true
	if err := sh.Wait(); err != nil {
		return out.String(), fmt.Errorf("the shell ended with %v", err)
	}
	return out.String(), nil
}

// stopLeftovers stops a cluster a failed block left behind: cluster down,
// then SIGKILL to any agent of this test's state directory still alive.
func stopLeftovers(t *testing.T, bin string, env []string, state string) {
	if len(agentsUnder(state)) == 0 {
		return
	}
	down := exec.Command(filepath.Join(bin, "cosched"), "cluster", "down")
	down.Env = env
	if out, err := down.CombinedOutput(); err != nil {
		t.Logf("cluster down: %v\n%s", err, out)
	}
	for _, pid := range agentsUnder(state) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// agentsUnder lists the live cosched agents whose command line mentions
// dir (their state directory): the agents this test started, not others'.
func agentsUnder(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(cmdline), "\x00agent\x00") && strings.Contains(string(cmdline), dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestRunBlock(t *testing.T) {
	dir := t.TempDir()
	env := os.Environ()
	// Variables and cd carry over; a command cannot read the script.
	out, err := runBlock([]string{"x=7", "cd /", "cat", "echo $x $(pwd)"}, dir, env, 10*time.Second)
	if err != nil || out != "7 /\n" {
		t.Errorf("got %q, %v; want \"7 /\\n\"", out, err)
	}
	// A failing command ends the block and is named.
	out, err = runBlock([]string{"echo one", "false", "echo never"}, dir, env, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "`false` failed") || out != "one\n" {
		t.Errorf("got %q, %v; want one line and `false` named", out, err)
	}
	// A command over its budget is killed with its children.
	start := time.Now()
	out, err = runBlock([]string{"echo $$ >pgid", "sleep 60 & sleep 61"}, dir, env, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "`sleep 60 & sleep 61` still running") {
		t.Errorf("got %q, %v; want the sleep named as over its budget", out, err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the block took %v to give up", d)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pgid"))
	if err != nil {
		t.Fatal(err)
	}
	var pgid int
	fmt.Sscanf(string(b), "%d", &pgid)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := syscall.Kill(-pgid, 0); err != nil {
			break // no process of the group is left
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of group %d still alive", pgid)
		}
	}
}
