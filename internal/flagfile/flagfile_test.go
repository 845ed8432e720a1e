package flagfile

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

type settings struct {
	Name  string   `toml:"name"`
	MPL   int      `toml:"mpl"`
	Join  []string `toml:"join"`
	Slice string   `toml:"slice"`
}

func load(t *testing.T, file string, args ...string) (settings, func(string) bool, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.toml")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	s := settings{Slice: "50ms"}
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	fs.StringVar(&s.Name, "name", "", "")
	fs.IntVar(&s.MPL, "mpl", 3, "")
	fs.StringSliceVar(&s.Join, "join", nil, "")
	fs.StringVar(&s.Slice, "slice", s.Slice, "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	changed, err := Load(fs, "--config", path, &s)
	return s, changed, err
}

// The file's values apply, the command line's win over them (lists
// included), and changed tells both apart from defaults.
func TestCommandLineWinsOverFile(t *testing.T) {
	s, changed, err := load(t, "name = \"n0\"\nmpl = 2\njoin = [\"a:1\", \"b:2\"]\n", "--mpl", "4", "--join", "c:3")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "n0" || s.MPL != 4 || strings.Join(s.Join, ",") != "c:3" || s.Slice != "50ms" {
		t.Errorf("settings %+v, want name from the file, mpl and join from the command line, slice the default", s)
	}
	for name, want := range map[string]bool{"name": true, "mpl": true, "join": true, "slice": false} {
		if changed(name) != want {
			t.Errorf("changed(%q) = %v, want %v", name, !want, want)
		}
	}
}

func TestUnknownKeyAndBadFile(t *testing.T) {
	if _, _, err := load(t, "nmae = \"n0\"\n"); err == nil || !strings.Contains(err.Error(), "unknown keys: [nmae]") || !strings.HasPrefix(err.Error(), "--config ") {
		t.Errorf("misspelt key: %v", err)
	}
	if _, _, err := load(t, "mpl = \"two\"\n"); err == nil || !strings.HasPrefix(err.Error(), "--config ") {
		t.Errorf("wrong type: %v", err)
	}
}

// FlagNames follows the toml keys, into embedded structs.
func TestFlagNames(t *testing.T) {
	type inner struct {
		RealtimePriority int `toml:"realtime_priority"`
	}
	var v struct {
		settings
		inner
		Skipped  int `toml:"-"`
		Untagged int
	}
	got := FlagNames(v)
	want := map[string]string{"Name": "--name", "MPL": "--mpl", "Join": "--join", "Slice": "--slice", "RealtimePriority": "--realtime-priority"}
	if !maps.Equal(got, want) {
		t.Errorf("FlagNames = %v, want %v", got, want)
	}
}

// A file far larger than any settings (/dev/zero) is refused after a
// bounded read.
func TestLoadBoundsItsRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.toml")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 64<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	var s settings
	_, err := Load(pflag.NewFlagSet("agent", pflag.ContinueOnError), "--config", path, &s)
	if err == nil || !strings.Contains(err.Error(), "--config "+path+": more than 1024 KiB") {
		t.Errorf("64 MiB file: %v", err)
	}
}
