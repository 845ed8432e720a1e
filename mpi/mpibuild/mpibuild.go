// Package mpibuild builds cosched's MPI library (mpi/build.sh) and
// compiles MPI programs with the system's mpicc, for tests: the library
// into a directory of the caller's, programs beside it. Programs are
// linked by MPICH's own mpicc against MPICH's libmpich.so.12, exactly as
// a user's would be; Env then points LD_LIBRARY_PATH at cosched's library
// so that the same binary runs on it.
//
// When gcc, mpicc or MPICH's mpi.h is missing, New returns an error
// wrapping ErrUnavailable: tests skip with its text (CI installs them).
package mpibuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// ErrUnavailable says a tool the library or the programs need is missing.
var ErrUnavailable = errors.New("mpibuild: MPI toolchain unavailable")

// Kit is the library, built once, and the programs compiled against it.
// Its methods may be called from several goroutines.
type Kit struct {
	// LibDir holds libmpich.so.12 and libmpi.so.12 (cosched's).
	LibDir string
	// BinDir holds the compiled programs.
	BinDir string

	mu    sync.Mutex
	progs map[string]string
}

// Root is the repository's root directory (where go.mod is), found from
// this source file's location: tests run in their package's directory.
func Root() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("mpibuild: cannot locate the source tree")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("mpibuild: go.mod not found above " + filepath.Dir(file))
		}
		dir = parent
	}
}

// MPICC is MPICH's compiler wrapper: mpicc.mpich when installed (with
// Open MPI installed too, plain mpicc is whichever the alternatives
// pick), else mpicc.
func MPICC() string {
	if _, err := exec.LookPath("mpicc.mpich"); err == nil {
		return "mpicc.mpich"
	}
	return "mpicc"
}

// Check says whether gcc and mpicc are installed.
func Check() error {
	for _, tool := range []string{"gcc", MPICC()} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: no %s (apt-get install mpich libmpich-dev)", ErrUnavailable, tool)
		}
	}
	return nil
}

// BuildLib runs mpi/build.sh into dir.
func BuildLib(ctx context.Context, dir string) error {
	root, err := Root()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "sh", filepath.Join(root, "mpi", "build.sh"), dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 {
			return fmt.Errorf("%w: %s", ErrUnavailable, strings.TrimSpace(out.String()))
		}
		return fmt.Errorf("mpibuild: mpi/build.sh %s: %w\n%s", dir, err, out.String())
	}
	return nil
}

// New builds the library into dir/lib; programs go to dir/bin.
func New(ctx context.Context, dir string) (*Kit, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	k := &Kit{LibDir: filepath.Join(dir, "lib"), BinDir: filepath.Join(dir, "bin"), progs: map[string]string{}}
	if err := os.MkdirAll(k.BinDir, 0o755); err != nil {
		return nil, fmt.Errorf("mpibuild: %w", err)
	}
	if err := BuildLib(ctx, k.LibDir); err != nil {
		return nil, err
	}
	return k, nil
}

// MPIF90 is MPICH's Fortran compiler wrapper, as MPICC is its C one:
// mpif90.mpich when installed, else mpif90.
func MPIF90() string {
	if _, err := exec.LookPath("mpif90.mpich"); err == nil {
		return "mpif90.mpich"
	}
	return "mpif90"
}

// CheckFortran says whether MPICH's Fortran wrapper and a Fortran compiler
// are installed (Debian's libmpich-dev brings gfortran), with the error
// wrapping ErrUnavailable if not.
func CheckFortran() error {
	f90 := MPIF90()
	if _, err := exec.LookPath(f90); err != nil {
		return fmt.Errorf("%w: %s not installed (apt-get install libmpich-dev)", ErrUnavailable, f90)
	}
	if out, err := exec.Command(f90, "-show").CombinedOutput(); err != nil || !bytes.Contains(out, []byte("mpich")) {
		return fmt.Errorf("%w: %s -show does not name MPICH's Fortran library: %s", ErrUnavailable, f90, bytes.TrimSpace(out))
	}
	return nil
}

// Program compiles the C source src (a path, or relative to the
// repository's root) with mpicc -O2, or a Fortran one (.f90, .f) with
// mpif90 -O2, and returns the executable's path. A source is compiled
// once per Kit.
func (k *Kit) Program(ctx context.Context, src string, extra ...string) (string, error) {
	if !filepath.IsAbs(src) {
		root, err := Root()
		if err != nil {
			return "", err
		}
		src = filepath.Join(root, src)
	}
	key := src + "\x00" + strings.Join(extra, "\x00")
	k.mu.Lock()
	defer k.mu.Unlock()
	if p, ok := k.progs[key]; ok {
		return p, nil
	}
	ext := filepath.Ext(src)
	name := strings.TrimSuffix(filepath.Base(src), ext)
	out := filepath.Join(k.BinDir, fmt.Sprintf("%s-%d", name, len(k.progs)))
	args := append([]string{"-O2", "-o", out, src}, extra...)
	compiler := MPICC()
	switch ext {
	case ".f90", ".f":
		if err := CheckFortran(); err != nil {
			return "", err
		}
		compiler = MPIF90()
		// gfortran writes a module's .mod file where it runs, unless told.
		mods, err := os.MkdirTemp(k.BinDir, name+"-mod")
		if err != nil {
			return "", fmt.Errorf("mpibuild: %w", err)
		}
		defer os.RemoveAll(mods)
		args = append(args, "-J", mods)
	default:
		args = append(args, "-lm")
	}
	cmd := exec.CommandContext(ctx, compiler, args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("mpibuild: %s %s: %w\n%s", compiler, src, err, b)
	}
	k.progs[key] = out
	return out, nil
}

// Env returns env with LD_LIBRARY_PATH leading to the Kit's library,
// which then stands in for MPICH's in the programs it starts.
func (k *Kit) Env(env []string) []string {
	out := make([]string, 0, len(env)+1)
	path := k.LibDir
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "LD_LIBRARY_PATH="); ok {
			if v != "" {
				path += ":" + v
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LD_LIBRARY_PATH="+path)
}

// Include is the directory of MPICH's mpi.h (what build.sh compiles
// against): $MPI_INCLUDE, else where Debian and others install it.
func Include() (string, error) {
	dirs := []string{"/usr/include/x86_64-linux-gnu/mpich", "/usr/include/mpich", "/usr/include/aarch64-linux-gnu/mpich"}
	if d := os.Getenv("MPI_INCLUDE"); d != "" {
		dirs = []string{d}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "mpi.h")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w: MPICH's mpi.h not found in %s (apt-get install libmpich-dev, or set MPI_INCLUDE)", ErrUnavailable, strings.Join(dirs, ", "))
}
