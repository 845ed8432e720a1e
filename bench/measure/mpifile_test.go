package measure

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/sharing"
)

// mpichProgram compiles a two-line MPI program with MPICH's mpicc into
// dir, or skips (CI installs mpich and libmpich-dev).
func mpichProgram(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("mpicc.mpich"); err != nil {
		t.Skip("no mpicc.mpich (apt-get install mpich libmpich-dev)")
	}
	src := filepath.Join(dir, "p.c")
	os.WriteFile(src, []byte("#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); return MPI_Finalize(); }\n"), 0o644)
	exe := filepath.Join(dir, "prog")
	if b, err := exec.Command("mpicc.mpich", "-o", exe, src).CombinedOutput(); err != nil {
		t.Fatalf("mpicc.mpich: %v\n%s", err, b)
	}
	return exe
}

// A good file: paths relative to its directory, defaults filled in.
func TestParseMPIProgramsReadsAGoodFile(t *testing.T) {
	dir := t.TempDir()
	mpichProgram(t, dir)
	text := `# two programs
[[program]]
path = "prog"
args = ["1", "2"]
ranks = 2

[[program]]
name = "other"
path = "prog"
ranks = 4
weight = 3
sync = "nb"
imbalance = "5ms"
`
	f, err := ParseMPIPrograms(filepath.Join(dir, "p.toml"), text)
	if err != nil {
		t.Fatal(err)
	}
	a, b := f.Programs[0], f.Programs[1]
	if a.Name != "prog" || a.Path != filepath.Join(dir, "prog") || strings.Join(a.Args, " ") != "1 2" || a.Ranks != 2 || a.Weight != 1 || a.Sync != "" || a.Line != 2 {
		t.Errorf("first: %+v", a)
	}
	if b.Name != "other" || b.Ranks != 4 || b.Weight != 3 || b.Sync != bench.NonBlocking || b.Imbalance != 5*time.Millisecond || b.Line != 7 {
		t.Errorf("second: %+v", b)
	}
	if f.Dir != dir {
		t.Errorf("Dir %q, want %q", f.Dir, dir)
	}
}

// Bad input: every problem at once, each naming the file, the line and
// the field.
func TestParseMPIProgramsNamesFileLineAndField(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script.sh")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o644)
	notMPI, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1)")
	}
	path := filepath.Join(dir, "progs.toml")
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"syntax", "[[program]]\npath = \"x\"\nranks = \n", []string{path + ":3:"}},
		{"type", "[[program]]\npath = \"x\"\nranks = \"four\"\n", []string{path + ":3: program.ranks:"}},
		{"no program", "# nothing\n", []string{path + ": program: no [[program]] table"}},
		{"unknown field", "[[program]]\npath = \"" + notMPI + "\"\nranks = 1\nrank = 2\n", []string{path + ":4: program.rank: unknown field"}},
		{"missing path", "[[program]]\nranks = 1\n", []string{path + ":1: path: missing"}},
		{"missing file", "[[program]]\npath = \"nope\"\nranks = 1\n", []string{path + ":2: path: nope: no such file or directory"}},
		{"not executable", "[[program]]\npath = \"plain\"\nranks = 1\n", []string{path + ":2: path: plain: is not executable"}},
		{"not ELF", "[[program]]\npath = \"script.sh\"\nranks = 1\n", []string{path + ":2: path: script.sh: is not an ELF executable"}},
		{"not MPICH", "[[program]]\npath = \"" + notMPI + "\"\nranks = 1\n", []string{path + ":2: path: " + notMPI + ": is not an MPICH program"}},
		{"directory", "[[program]]\npath = \".\"\nranks = 1\n", []string{path + ":2: path: .: is a directory"}},
		{"fields", "[[program]]\npath = \"" + notMPI + "\"\n\n[[program]]\nname = \"a b\"\npath = \"" + notMPI + "\"\nranks = 0\nweight = 0\nsync = \"sometimes\"\nimbalance = \"lots\"\n",
			[]string{path + ":1: ranks: 0", path + ":5: name: \"a b\"", path + ":7: ranks: 0", path + ":8: weight: 0", path + ":9: sync: \"sometimes\"", path + ":10: imbalance: \"lots\""}},
		{"same name", "[[program]]\npath = \"" + notMPI + "\"\nranks = 1\n[[program]]\npath = \"" + notMPI + "\"\nranks = 1\n", []string{path + ":4: name: \"true\" is also the program at line 1"}},
		{"too many jobs", "[[program]]\npath = \"" + notMPI + "\"\nranks = 1\nweight = 1000\n[[program]]\nname = \"b\"\npath = \"" + notMPI + "\"\nranks = 1\nweight = 1000\n", []string{path + ": weight: the weights make 2000 jobs"}},
	} {
		_, err := ParseMPIPrograms(path, c.text)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.HasPrefix(err.Error(), "--mpi-programs: ") {
			t.Errorf("%s: %q does not name the flag", c.name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
	}
	if _, err := LoadMPIPrograms(filepath.Join(dir, "absent.toml")); err == nil || !strings.Contains(err.Error(), "absent.toml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestParseArms(t *testing.T) {
	arms, err := ParseArms("bcs:2ms, BCS:50ms,gang:10ms:3,space,gang")
	if err != nil {
		t.Fatal(err)
	}
	want := []Arm{{"bcs", 2 * time.Millisecond, 0}, {"bcs", 50 * time.Millisecond, 0}, {"gang", 10 * time.Millisecond, 3}, {"space", 0, 0}, {"gang", 0, 0}}
	if len(arms) != len(want) {
		t.Fatalf("%+v", arms)
	}
	labels := []string{"bcs-2ms", "bcs-50ms", "gang-10ms-mpl3", "", ""}
	for i := range want {
		if arms[i] != want[i] || arms[i].Label() != labels[i] {
			t.Errorf("arm %d: %+v %q, want %+v %q", i, arms[i], arms[i].Label(), want[i], labels[i])
		}
	}
	if got := armsText(arms); got != "bcs:2ms,bcs:50ms,gang:10ms:3,space,gang" {
		t.Errorf("armsText %q", got)
	}
	for _, bad := range []string{"bcs:fast", "bcs:-1ms", "gang:5ms:0", "gang:5ms:x", "space:5ms", "bcs:1ms:2:3"} {
		if _, err := ParseArms(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	o := DefaultRunOptions()
	o.Arms, o.Modes = []Arm{{"bcs", 2 * time.Millisecond, 0}, {"bcs", 2 * time.Millisecond, 0}, {"gang", 100 * time.Microsecond, 0}}, []sharing.Mode{"bcs", "bcs", "gang"}
	err = o.Validate()
	if err == nil || !strings.Contains(err.Error(), "bcs-2ms twice") || !strings.Contains(err.Error(), "gang-100µs: the slice must be from") {
		t.Errorf("Validate: %v", err)
	}
}
