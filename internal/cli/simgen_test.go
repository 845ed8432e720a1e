package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/sharedtest"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/swf"
	"github.com/cosched/cosched/jss/workload"
)

// genCLI runs `cosched sim gen|fit ARGS` in-process under a root built like
// newRootCmd's, with run's exit statuses (0, 1, 2 for usage errors).
func genCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	root := &cobra.Command{Use: "cosched", SilenceUsage: true, SilenceErrors: true}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	sim := &cobra.Command{Use: "sim"}
	sim.AddCommand(newSimGenCmd(), newSimFitCmd())
	root.AddCommand(sim)
	var out, errb bytes.Buffer
	root.SetArgs(append([]string{"sim"}, args...))
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.ExecuteContext(context.Background())
	switch {
	case err == nil:
	case isUsage(err):
		code = 2
	default:
		code = 1
	}
	if err != nil {
		fmt.Fprintf(&errb, "cosched: %v\n", err)
	}
	return code, out.String(), errb.String()
}

// readSWF reads a whole SWF text, returning its header and records.
func readSWF(t *testing.T, text string) (*swf.Header, []swf.Record) {
	t.Helper()
	rd, err := swf.NewReader(strings.NewReader(text), "out.swf")
	if err != nil {
		t.Fatal(err)
	}
	var recs []swf.Record
	for {
		r, err := rd.Next()
		if err == io.EOF {
			return rd.Header(), recs
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
}

func TestSimGenWritesSWF(t *testing.T) {
	code, out, errOut := genCLI(t, "", "gen", "--jobs", "300", "--load", "0.8", "--seed", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	h, recs := readSWF(t, out)
	if len(recs) != 300 || h.MaxJobs != 300 || h.MaxProcs != 32 {
		t.Fatalf("%d jobs, header MaxJobs %d MaxProcs %d", len(recs), h.MaxJobs, h.MaxProcs)
	}
	tpls, err := jss.ReadTemplates(h)
	if err != nil || len(tpls) != 3 || tpls[1].String() != "50ms,25ms,news,NB" {
		t.Fatalf("templates %v: %v", tpls, err)
	}
	for _, r := range recs {
		if r.RequestedProcessors > 32 || r.Executable < 1 || r.Executable > 3 || r.RequestedMemory != -1 {
			t.Fatalf("line %d: %+v", r.Line, r)
		}
	}

	// --out writes the same file (same flags, same workload) atomically.
	path := filepath.Join(t.TempDir(), "w3.swf")
	code, stdout, errOut := genCLI(t, "", "gen", "--jobs", "300", "--load", "0.8", "--seed", "3", "--out", path)
	if code != 0 || stdout != "" || !strings.Contains(errOut, "wrote 300 jobs to "+path) {
		t.Fatalf("exit %d: stdout %q stderr %q", code, stdout, errOut)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != out {
		t.Error("--out wrote something else than standard output got")
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// Another seed, another workload.
	_, other, _ := genCLI(t, "", "gen", "--jobs", "300", "--load", "0.8", "--seed", "4")
	if other == out {
		t.Error("seeds 3 and 4 gave the same workload")
	}
}

func TestSimGenMemoryAndNoTemplates(t *testing.T) {
	code, out, errOut := genCLI(t, "", "gen", "--jobs", "500", "--workload", "none", "--procs", "8", "--mem-mean", "256MB", "--mem-per-proc", "512MiB")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	h, recs := readSWF(t, out)
	if tpls, _ := jss.ReadTemplates(h); len(tpls) != 0 {
		t.Errorf("templates %v with --workload none", tpls)
	}
	note, _ := h.Get("Note")
	if !strings.Contains(note, "mean 256000000 bytes, at most 536870912") {
		t.Errorf("note %q", note)
	}
	for _, r := range recs {
		if r.Executable != -1 || r.RequestedProcessors > 8 || !(r.RequestedMemory > 0 && r.RequestedMemory <= 512*1024) {
			t.Fatalf("line %d: %+v", r.Line, r)
		}
	}
}

func TestSimGenBadFlags(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"every problem at once", []string{"gen", "--workload", "w9", "--load", "-1", "--mem-mean", "1GB", "--jobs", "0", "--procs", "0", "--mean-runtime", "-5s"},
			[]string{"6 problems with the command line", `--workload "w9": unknown workload (valid: w0, w1, w2, w3, w4, none)`, "--load -1: must be in (0, 1000]", "--mem-mean 1GB: no room: more than --mem-per-proc 512MiB", "--jobs 0", "--procs 0", "--mean-runtime -5s"}},
		{"memory sizes", []string{"gen", "--mem-mean", "lots", "--mem-per-proc", "12XB"},
			[]string{"2 problems", `--mem-mean "lots": not a memory size`, `--mem-per-proc "12XB": not a memory size`}},
		{"no room at all", []string{"gen", "--mem-mean", "1KB", "--mem-per-proc", "0"},
			[]string{"--mem-mean 1KB: no room: more than --mem-per-proc 0"}},
		{"unknown flag", []string{"gen", "--bogus"}, []string{"unknown flag: --bogus"}},
		{"not a number", []string{"gen", "--load", "high"}, []string{"--load"}},
		{"stray argument", []string{"gen", "extra"}, []string{"unknown command"}},
		{"fit: every problem", []string{"fit", "--format", "xml", "--procs", "-1"},
			[]string{"3 problems", "--trace: required", `--format "xml": want json or table`, "--procs -1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := genCLI(t, "", c.args...)
			if code != 2 || out != "" {
				t.Errorf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

func TestSimGenFitTraceMissing(t *testing.T) {
	code, out, errOut := genCLI(t, "", "gen", "--fit-trace", filepath.Join(t.TempDir(), "absent.swf"))
	if code != 1 || out != "" || !strings.Contains(errOut, "--fit-trace: stat ") {
		t.Errorf("exit %d: %s%s", code, out, errOut)
	}
	code, _, errOut = genCLI(t, "", "fit", "--trace", t.TempDir())
	if code != 1 || !strings.Contains(errOut, "is a directory") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

func TestSimFitPrintsModel(t *testing.T) {
	// Fit a generated workload: the model has the generator's classes.
	_, trace, _ := genCLI(t, "", "gen", "--jobs", "3000", "--procs", "16", "--seed", "5")
	path := writeFile(t, "gen.swf", trace)
	code, out, errOut := genCLI(t, "", "fit", "--trace", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var m workload.Model
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.Source != "gen.swf" || m.Processors != 16 || len(m.Classes) != 5 || m.Classes[4].MaxSize != 16 {
		t.Errorf("model of %q on %d processors, %d classes", m.Source, m.Processors, len(m.Classes))
	}
	// From standard input, with the machine size overridden.
	code, out2, errOut := genCLI(t, trace, "fit", "--trace", "-", "--procs", "20")
	if code != 0 || !strings.Contains(out2, `"source": "<stdin>"`) || !strings.Contains(out2, `"processors": 20`) {
		t.Errorf("stdin: exit %d: %s", code, errOut)
	}
	// --fit-trace generates from the fitted model.
	code, gen, errOut := genCLI(t, "", "gen", "--fit-trace", path, "--jobs", "50")
	if code != 0 {
		t.Fatalf("gen --fit-trace: exit %d: %s", code, errOut)
	}
	if h, recs := readSWF(t, gen); len(recs) != 50 || !strings.Contains(h.Fields[len(h.Fields)-4].Value, "fitted to gen.swf") {
		t.Errorf("%d jobs; header %v", len(recs), h.Fields)
	}
}

func TestSimFitTable(t *testing.T) {
	_, trace, _ := genCLI(t, "", "gen", "--jobs", "2000", "--seed", "2")
	path := writeFile(t, "gen.swf", trace)
	code, out, errOut := genCLI(t, "", "fit", "--trace", path, "--format", "table")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "Workload model of gen.swf (32 processors)") || !strings.Contains(lines[1], "offered load ") {
		t.Errorf("heading:\n%s", out)
	}
	head := strings.Fields(lines[3])
	if strings.Join(head, " ") != "sizes jobs mean interarrival order CV mean runtime order CV mean size" {
		t.Errorf("columns %q", head)
	}
	// Six classes, 1 to 17-32; their jobs add up to the trace's.
	var sizes []string
	jobs := 0
	for _, l := range lines[4:10] {
		f := strings.Fields(l)
		sizes = append(sizes, f[0])
		var n int
		fmt.Sscan(f[1], &n)
		jobs += n
	}
	if strings.Join(sizes, " ") != "1 2 3-4 5-8 9-16 17-32" || jobs != 2000 {
		t.Errorf("classes %v, %d jobs:\n%s", sizes, jobs, out)
	}
}

func TestSimFitKTHIsTheBuiltinModel(t *testing.T) {
	// `cosched sim fit` on KTH-SP2 prints builtin.json exactly, so it can
	// regenerate it.
	path := sharedtest.Path(t, "traces", "KTH-SP2-1996-2.swf")
	code, out, errOut := genCLI(t, "", "fit", "--trace", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var want bytes.Buffer
	if err := workload.Builtin().WriteJSON(&want); err != nil {
		t.Fatal(err)
	}
	if out != want.String() {
		t.Errorf("fit of %s differs from the built-in model:\n%s", path, out)
	}
	code, out, errOut = genCLI(t, "", "fit", "--trace", path, "--format", "table")
	if code != 0 || !strings.Contains(out, "65-128") || !strings.Contains(out, "(100 processors)") {
		t.Errorf("table: exit %d: %s%s", code, out, errOut)
	}
}
