package shim

import (
	"os"
	"path/filepath"
)

// Name is the file name of the shim binary (cmd/cosched-rank).
const Name = "cosched-rank"

// Path is where make build puts the shim binary for the cosched binary
// exe: lib/cosched/Name beside exe's bin directory (bin/cosched and
// lib/cosched/ side by side), through symbolic links.
func Path(exe string) string {
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return filepath.Join(filepath.Dir(exe), "..", "lib", "cosched", Name)
}

// Command is the command prefix that starts ranks for the cosched binary
// exe (node/rank.Config.Shim): the shim binary at Path(exe) when it is
// there and executable, else exe's own hidden "__rank-exec" subcommand,
// which does the same at the cost of exe's start-up and memory.
func Command(exe string) []string {
	if p, ok := Installed(exe); ok {
		return []string{p}
	}
	return []string{exe, "__rank-exec"}
}

// Installed is Path(exe), and whether a file every user may execute is
// there (ranks run as their submitters).
func Installed(exe string) (string, bool) {
	p := Path(exe)
	st, err := os.Stat(p)
	return p, err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 == 0o111
}
