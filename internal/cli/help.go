package cli

import (
	"embed"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/jobtable"
)

// helpFiles holds each command's long help and examples: help/NAME.txt,
// NAME its path after "cosched" with dashes for spaces ("sim-sweep"), or
// "cosched" for the root. The text is user documentation, kept as text;
// a line "-- example --" starts the examples.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpExample separates a help file's long text from its examples.
const helpExample = "\n-- example --\n"

// loadHelp sets the Long and Example text of cmd from its help file, once.
func loadHelp(cmd *cobra.Command) {
	if cmd.Long != "" || cmd.Example != "" {
		return
	}
	name := "cosched"
	if cmd.HasParent() {
		name = strings.ReplaceAll(strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), " ", "-")
	}
	if b, err := helpFiles.ReadFile("help/" + name + ".txt"); err == nil {
		// {{FieldLetters}} quotes what the code accepts, so help and
		// behaviour cannot drift apart.
		text := strings.ReplaceAll(strings.TrimSuffix(string(b), "\n"), "{{FieldLetters}}", jobtable.FieldLetters)
		cmd.Long, cmd.Example, _ = strings.Cut(text, helpExample)
	}
}

// LoadHelp sets the Long and Example text of cmd and its subcommands from
// their help files, as showing each one's help does (for tests and
// documentation that read them without showing the help).
func LoadHelp(cmd *cobra.Command) {
	loadHelp(cmd)
	for _, sub := range cmd.Commands() {
		LoadHelp(sub)
	}
}

// HelpFiles are the help files (help/NAME.txt), for a test that every
// command of the full binary has its own.
func HelpFiles() fs.FS { return helpFiles }
