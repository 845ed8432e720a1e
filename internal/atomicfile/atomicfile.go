// Package atomicfile writes files so that readers see either no file (or
// the previous one) or the complete new one, never a partial file: data
// goes to a temporary file in the same directory, renamed into place once
// it is written and closed. A run that fails or is interrupted leaves
// nothing behind.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// File is a file being written. Commit publishes it; Abort discards it.
type File struct {
	f    *os.File
	path string
	done bool
}

// Create starts writing path.
func Create(path string) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, err
	}
	return &File{f: f, path: path}, nil
}

// Write implements io.Writer.
func (a *File) Write(p []byte) (int, error) { return a.f.Write(p) }

// Commit closes the file and renames it into place (mode 0644).
func (a *File) Commit() error {
	err := a.f.Close()
	if err == nil {
		err = os.Chmod(a.f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(a.f.Name(), a.path)
	}
	if err != nil {
		os.Remove(a.f.Name())
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	a.done = true
	return nil
}

// Abort discards the file unless it was committed. It is safe to call more
// than once and after Commit (e.g. deferred).
func (a *File) Abort() {
	if !a.done {
		a.done = true
		a.f.Close()
		os.Remove(a.f.Name())
	}
}

// Group is files written together: a run's outputs, all published once it
// succeeded, none otherwise. The zero value is an empty group.
type Group struct{ files []*File }

// Create starts writing path as a file of the group.
func (g *Group) Create(path string) (*File, error) {
	f, err := Create(path)
	if err == nil {
		g.files = append(g.files, f)
	}
	return f, err
}

// Commit publishes the files in turn, stopping at the first that fails
// (Abort discards the others).
func (g *Group) Commit() error {
	for _, f := range g.files {
		if err := f.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// Abort discards every file not committed; it may be deferred.
func (g *Group) Abort() {
	for _, f := range g.files {
		f.Abort()
	}
}

// WriteFile writes data to path atomically.
func WriteFile(path string, data []byte) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// CheckSpace refuses to start writing an estimated need bytes to path
// when its file system has less free space: a file that cannot fit would
// fill the disk before failing. A directory it cannot examine passes (the
// Create that follows reports it).
func CheckSpace(path string, need int64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &st); err != nil {
		return nil
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if need > free {
		return fmt.Errorf("the output needs about %d MB, only %d MB are free there", need>>20, free>>20)
	}
	return nil
}

// CheckDir creates dir if needed and checks that files can be created in
// it, so that a long run with an unusable output directory fails before
// it starts rather than when it has its results.
func CheckDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	probe, err := os.CreateTemp(dir, ".cosched-probe*")
	if err != nil {
		return err
	}
	probe.Close()
	return os.Remove(probe.Name())
}
