package measure

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/cosched/cosched/bench"
)

// MPIProgram is one program of an --mpi-programs file: an MPICH program
// that bench run submits with --mpi cosched, Weight times per workload.
type MPIProgram struct {
	Name   string   // default: the path's base name
	Path   string   // absolute (the file's own paths are relative to its directory)
	Args   []string // its command-line arguments
	Ranks  int
	Weight int // jobs of it in the workload (default 1)
	// Sync, if set, is the model's sync (bench.Blocking or
	// bench.NonBlocking) instead of the one inferred from the counters.
	Sync bench.Sync
	// Imbalance is the model's v (default 0): the counters cannot show it.
	Imbalance time.Duration
	Line      int // of its [[program]] header, for errors
}

// MPIPrograms is a parsed --mpi-programs file.
type MPIPrograms struct {
	File     string
	Dir      string // the file's directory, absolute: the ranks' working directory
	Programs []MPIProgram
}

// mpiFileText is the file's TOML form.
type mpiFileText struct {
	Program []struct {
		Name      string   `toml:"name"`
		Path      string   `toml:"path"`
		Args      []string `toml:"args"`
		Ranks     int      `toml:"ranks"`
		Weight    *int     `toml:"weight"`
		Sync      string   `toml:"sync"`
		Imbalance string   `toml:"imbalance"`
	} `toml:"program"`
}

// MaxMPIJobs bounds the jobs a file's weights make.
const MaxMPIJobs = 1000

// LoadMPIPrograms reads and checks an --mpi-programs file: every problem
// at once, each naming the file, the line and the field. Each program must
// exist, be executable and be linked against MPICH's libmpich.so.12 (what
// cosched's library stands in for).
func LoadMPIPrograms(path string) (*MPIPrograms, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--mpi-programs: %w", err)
	}
	return ParseMPIPrograms(path, string(b))
}

// ParseMPIPrograms is LoadMPIPrograms on text read from path.
func ParseMPIPrograms(path, text string) (*MPIPrograms, error) {
	var f mpiFileText
	md, err := toml.Decode(text, &f)
	if err != nil {
		var pe toml.ParseError
		if m := tomlTypeError().FindStringSubmatch(err.Error()); m != nil {
			// The decoder's type errors are text: "toml: line 3 (last key …): …".
			return nil, fmt.Errorf("--mpi-programs: %s:%s: %s: %s", path, m[1], m[2], m[3])
		}
		if errors.As(err, &pe) {
			if pe.LastKey != "" {
				return nil, fmt.Errorf("--mpi-programs: %s:%d: %s: %s", path, pe.Position.Line, pe.LastKey, pe.Message)
			}
			return nil, fmt.Errorf("--mpi-programs: %s:%d: %s", path, pe.Position.Line, pe.Message)
		}
		return nil, fmt.Errorf("--mpi-programs: %s: %w", path, err)
	}
	lines := strings.Split(text, "\n")
	headers := programHeaders(lines)
	var errs []error
	bad := func(line int, field, format string, args ...any) {
		where := path
		if line > 0 {
			where = fmt.Sprintf("%s:%d", path, line)
		}
		errs = append(errs, fmt.Errorf("%s: %s: %s", where, field, fmt.Sprintf(format, args...)))
	}
	for _, k := range md.Undecoded() {
		line := 0
		if len(k) > 0 {
			line = keyLine(lines, 0, len(lines), k[len(k)-1])
		}
		bad(line, k.String(), "unknown field (valid: name, path, args, ranks, weight, sync, imbalance under [[program]])")
	}
	if len(f.Program) == 0 && len(errs) == 0 {
		bad(0, "program", "no [[program]] table: name at least one MPI program (path, args, ranks)")
	}
	out := &MPIPrograms{File: path}
	if abs, err := filepath.Abs(path); err == nil {
		out.Dir = filepath.Dir(abs)
	}
	dir := filepath.Dir(path)
	names := map[string]int{}
	jobs := 0
	for i, p := range f.Program {
		start, end := 0, len(lines)
		if i < len(headers) {
			start = headers[i]
			if i+1 < len(headers) {
				end = headers[i+1]
			}
		}
		at := func(field string) int {
			if l := keyLine(lines, start, end, field); l > 0 {
				return l
			}
			return start + 1
		}
		mp := MPIProgram{Name: p.Name, Args: p.Args, Ranks: p.Ranks, Weight: 1, Line: start + 1}
		switch {
		case p.Path == "":
			bad(at("path"), "path", "missing: the MPI program to run (relative to the file's directory, or absolute)")
		default:
			mp.Path = p.Path
			if !filepath.IsAbs(mp.Path) {
				mp.Path = filepath.Join(dir, mp.Path)
			}
			if abs, err := filepath.Abs(mp.Path); err == nil {
				mp.Path = abs
			}
			if err := checkMPICHProgram(mp.Path); err != nil {
				bad(at("path"), "path", "%s: %v", p.Path, err)
			}
		}
		if mp.Name == "" {
			mp.Name = filepath.Base(p.Path)
		}
		if !validName().MatchString(mp.Name) {
			bad(at("name"), "name", "%q: want letters, digits, '.', '_' or '-' (it names the jobs)", mp.Name)
		} else if prev, ok := names[mp.Name]; ok {
			bad(at("name"), "name", "%q is also the program at line %d: give each a name", mp.Name, prev)
		}
		names[mp.Name] = mp.Line
		if p.Ranks < 1 || p.Ranks > 1<<20 {
			bad(at("ranks"), "ranks", "%d: want the number of MPI ranks, from 1", p.Ranks)
		}
		if p.Weight != nil {
			mp.Weight = *p.Weight
			if mp.Weight < 1 || mp.Weight > MaxMPIJobs {
				bad(at("weight"), "weight", "%d: want the jobs of this program in the workload, from 1 to %d", mp.Weight, MaxMPIJobs)
			}
		}
		jobs += max(mp.Weight, 0)
		switch s := bench.Sync(strings.ToUpper(p.Sync)); s {
		case "":
		case bench.Blocking, bench.NonBlocking:
			mp.Sync = s
		default:
			bad(at("sync"), "sync", "%q: want B (blocking exchanges) or NB (posted together, completed at a collective)", p.Sync)
		}
		if p.Imbalance != "" {
			d, err := time.ParseDuration(p.Imbalance)
			if err != nil || d < 0 {
				bad(at("imbalance"), "imbalance", "%q: want a non-negative duration such as 5ms", p.Imbalance)
			}
			mp.Imbalance = d
		}
		out.Programs = append(out.Programs, mp)
	}
	if jobs > MaxMPIJobs {
		bad(0, "weight", "the weights make %d jobs, more than %d", jobs, MaxMPIJobs)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("--mpi-programs: %w", err)
	}
	return out, nil
}

// Compiled on first use, not at package initialisation: every cosched
// command links this package and would pay for them at start-up (1,045
// allocations, 79 KB), though only an --mpi-programs file reads them.
var (
	tomlTypeError = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)
	})
	validName     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })
	programHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[\[\s*program\s*\]\]`) })
)

// programHeaders returns the 0-based line of every [[program]] header.
func programHeaders(lines []string) []int {
	var out []int
	for i, l := range lines {
		if programHeader().MatchString(l) {
			out = append(out, i)
		}
	}
	return out
}

// keyLine is the 1-based line in lines[start:end] that sets key, or 0.
func keyLine(lines []string, start, end int, key string) int {
	re := regexp.MustCompile(`^\s*"?` + regexp.QuoteMeta(key) + `"?\s*=`)
	for i := start; i < end && i < len(lines); i++ {
		if re.MatchString(lines[i]) {
			return i + 1
		}
	}
	return 0
}

// checkMPICHProgram says why path cannot run on cosched's MPI library:
// missing, not an executable, or not linked against MPICH's
// libmpich.so.12 (an Open MPI program asks for libmpi.so.40).
func checkMPICHProgram(path string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return errors.Unwrap(err)
	case st.IsDir():
		return errors.New("is a directory")
	case st.Mode()&0o111 == 0:
		return errors.New("is not executable")
	}
	f, err := elf.Open(path)
	if err != nil {
		return errors.New("is not an ELF executable (a compiled MPI program is needed: build it with MPICH's mpicc)")
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("reading its libraries: %w", err)
	}
	if slices.Contains(libs, "libmpich.so.12") || slices.Contains(libs, "libmpi.so.12") {
		return nil
	}
	for _, l := range libs {
		if strings.HasPrefix(l, "libmpi.so.") {
			return fmt.Errorf("is linked against %s, not MPICH's libmpich.so.12 (an Open MPI program?): build it with mpicc.mpich", l)
		}
	}
	return errors.New("is not an MPICH program (not linked against libmpich.so.12): build it with MPICH's mpicc (mpicc.mpich)")
}
