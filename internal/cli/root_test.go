package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The root NewLightRoot builds for a command line answers it as the whole
// tree does: the same output, errors and exit status, help included.
func TestLightRootAnswersAsWholeTree(t *testing.T) {
	for _, args := range [][]string{
		{"submit", "--help"}, {"submit", "-h"}, {"submit"}, {"submit", "--bogus"}, {"submit", "--tiem", "1"},
		{"queue", "--help"}, {"queue", "--url", "http://127.0.0.1:1", "extra"}, {"queue", "-o", "%Z"},
		{"cancel"}, {"cancel", "--help"}, {"show", "--help"}, {"show"}, {"nodes", "--help"}, {"nodes", "--bogus"},
		{"operator"}, {"operator", "raft", "--help"}, {"operator", "raft", "list-peers", "--help"}, {"operator", "nope"},
		{"output", "--help"}, {"output"},
		{"sim", "--help"}, {"sim", "sweep", "--help"}, {"sim", "plot", "--help"}, {"sim", "--bogus"}, {"sim", "closed", "--help"},
		{"--version"}, {"-v"}, {"--version", "--bogus"}, {"--version", "--help"}, {"--version", "submit"}, {"submit", "--version"},
		{"--help"}, {"help"}, {"help", "submit"}, {"help", "sim", "sweep"}, {"submti"}, {"version"}, {},
	} {
		var wo, we, lo, le bytes.Buffer
		wc := Run(context.Background(), NewRoot(nil), args, strings.NewReader(""), &wo, &we)
		lc := Run(context.Background(), NewLightRoot(args), args, strings.NewReader(""), &lo, &le)
		if wc != lc || wo.String() != lo.String() || we.String() != le.String() {
			t.Errorf("%q: whole tree: exit %d, stdout %q, stderr %q\nlight root: exit %d, stdout %q, stderr %q",
				args, wc, wo.String(), we.String(), lc, lo.String(), le.String())
		}
	}
}

// lightCommands names each command as the command itself does, so that
// NewLightRoot finds the one a command line runs; NewRoot has every one
// of them.
func TestLightRootNames(t *testing.T) {
	whole := NewRoot(nil)
	for _, c := range lightCommands() {
		cmd := c.build()
		if cmd.Name() != c.name {
			t.Errorf("lightCommands: %q builds the command %q", c.name, cmd.Name())
		}
		if found, _, err := whole.Find([]string{c.name}); err != nil || found.Name() != c.name {
			t.Errorf("NewRoot has no command %q: %v", c.name, err)
		}
		if root := NewLightRoot([]string{c.name, "--help"}); len(root.Commands()) != 1 {
			t.Errorf("NewLightRoot(%s --help) has %d commands, want that one", c.name, len(root.Commands()))
		}
	}
}

// The version answered without a command tree is the root command's.
func TestVersionLine(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-v"}} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), NewRoot(nil), args, strings.NewReader(""), &out, &errb)
		if !IsVersion(args) || code != 0 || out.String() != VersionLine() || errb.Len() != 0 {
			t.Errorf("%q: IsVersion %v; the root answers exit %d, %q, %q; VersionLine %q", args, IsVersion(args), code, out.String(), errb.String(), VersionLine())
		}
	}
	for _, args := range [][]string{{}, {"--version", "--help"}, {"--version=true"}, {"version"}, {"submit", "--version"}} {
		if IsVersion(args) {
			t.Errorf("IsVersion(%q) = true: the root has more to say", args)
		}
	}
}

// Help shows the command's long text and examples from its help file,
// which is read only then.
func TestHelpFromFiles(t *testing.T) {
	for _, tc := range []struct {
		args []string
		file string
	}{{[]string{"submit", "--help"}, "submit"}, {[]string{"help", "sim", "sweep"}, "sim-sweep"}, {[]string{"--help"}, "cosched"}, {[]string{"operator", "raft", "remove-peer", "-h"}, "operator-raft-remove-peer"}} {
		b, err := helpFiles.ReadFile("help/" + tc.file + ".txt")
		if err != nil {
			t.Fatal(err)
		}
		long, example, _ := strings.Cut(string(b), helpExample)
		first, _, _ := strings.Cut(long, "\n")
		code, out, errOut := cosched(t, "", tc.args...)
		if code != 0 || !strings.Contains(out, first) || example != "" && !strings.Contains(out, "Examples:\n") {
			t.Errorf("%q: exit %d, want help/%s.txt's text (%q) and examples\n%s%s", tc.args, code, tc.file, first, out, errOut)
		}
	}
}
