package localcluster

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cosched/cosched/node/rank/shim"
)

// sharedExe is the binary the agents of a cluster root starts in dir
// should run: other users' ranks start through it (the rank shim,
// bench-rank), so every user must be able to execute it. exe itself when
// they can; else a copy in dir/bin, when dir is open to them; else exe,
// with a note saying why other users' jobs will not start.
func sharedExe(exe, dir string) (string, string, error) {
	closed := closedToOthers(exe, true)
	if closed == "" {
		return exe, "", nil
	}
	if c := closedToOthers(filepath.Join(dir, "bin"), false); c != "" && c != filepath.Join(dir, "bin") {
		return exe, fmt.Sprintf("other users' jobs will not start: %s is closed to them (%s), and so is the state directory (%s): install cosched where every user may run it (/usr/local/bin)", exe, closed, c), nil
	}
	bin := filepath.Join(dir, "bin", "cosched")
	if err := copyExecutable(exe, bin); err != nil {
		return exe, "", fmt.Errorf("localcluster: a copy of %s that every user may run (%s is closed to them): %w", exe, closed, err)
	}
	// The rank shim beside it too, where the agents look for it
	// (shim.Path): without it they would start ranks through the copy.
	if sh, ok := shim.Installed(exe); ok {
		if err := copyExecutable(sh, shim.Path(bin)); err != nil {
			return exe, "", fmt.Errorf("localcluster: a copy of %s that every user may run (%s is closed to them): %w", sh, closed, err)
		}
	}
	return bin, "", nil
}

// closedToOthers returns the first of path and the directories above it
// that users other than its owner and group may not search (or, for path
// itself when file, execute); "" if none. A path that does not exist yet
// is judged by what exists above it.
func closedToOthers(path string, file bool) string {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err == nil && (p != path || !file || st.Mode().IsRegular()) && st.Mode().Perm()&0o001 == 0 {
			return p
		}
		if p == filepath.Dir(p) {
			return ""
		}
	}
}

// copyExecutable copies src to dst (mode 0755) through a temporary file
// renamed into place: an agent still running the old copy keeps its file.
func copyExecutable(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".cosched.tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
