// Package version names the running build: what cosched --version prints.
package version

import (
	"runtime/debug"
	"strings"
)

// String is the release set at link time (linked: empty when none was),
// else the module version and the VCS revision the Go toolchain recorded
// (with "+dirty" for uncommitted changes), else "devel"; then the Go
// version.
func String(linked string) string {
	if linked != "" {
		return linked
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 12:
			rev = s.Value[:12]
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev != "" && !strings.Contains(v, rev) {
		v += " (" + rev + dirty + ")"
	}
	return v + " " + info.GoVersion
}
