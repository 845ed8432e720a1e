package main

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/cli"
)

// Every help file belongs to a command and every visible command has its
// help file: a renamed command or a misspelt file name would otherwise
// lose its help silently.
func TestHelpFilesMatchCommands(t *testing.T) {
	files, err := fs.Glob(cli.HelpFiles(), "help/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	unused := map[string]bool{}
	for _, f := range files {
		unused[strings.TrimSuffix(strings.TrimPrefix(f, "help/"), ".txt")] = true
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		name := "cosched"
		if c.HasParent() {
			name = strings.ReplaceAll(strings.TrimPrefix(c.CommandPath(), "cosched "), " ", "-")
		}
		delete(unused, name)
		// Command groups, cobra's own commands and hidden ones have no long help.
		if c.Long == "" && !c.Hidden && c.HasParent() && !c.HasSubCommands() && c.Name() != "help" && c.Parent().Name() != "completion" && name != "cluster-down" {
			t.Errorf("%s has no long help (help/%s.txt)", name, name)
		}
		if strings.Contains(c.Long+c.Example, "{{") {
			t.Errorf("%s: unexpanded value in help: %q", name, c.Long+c.Example)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	root := newRootCmd()
	cli.LoadHelp(root)
	walk(root)
	for name := range unused {
		t.Errorf("help/%s.txt names no command", name)
	}
}
