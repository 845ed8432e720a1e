package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureArrows keeps docs/ARCHITECTURE.md's package map true to
// the code: every package of the module is drawn, and the project
// packages each one's arrows point to are exactly the ones it imports
// (go list's Imports, tests aside). A package drawn without arrows imports
// none of the project's.
func TestArchitectureArrows(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/cosched/cosched/"
	imports := map[string][]string{} // package → the project packages it imports
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		imports[pkg] = nil
		for _, imp := range f[1:] {
			if p, ok := strings.CutPrefix(imp, module); ok {
				imports[pkg] = append(imports[pkg], p)
			}
		}
	}

	drawn, err := parseArrows(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range sortedKeys(imports) {
		to, ok := drawn[pkg]
		if !ok {
			t.Errorf("docs/ARCHITECTURE.md draws no %s (imports %v)", pkg, imports[pkg])
			continue
		}
		want := slices.Sorted(slices.Values(imports[pkg]))
		got := slices.Sorted(slices.Values(to))
		got = slices.Compact(got)
		if !slices.Equal(got, want) {
			t.Errorf("docs/ARCHITECTURE.md: %s ──► %v; it imports %v", pkg, got, want)
		}
	}
	for _, pkg := range sortedKeys(drawn) {
		if _, ok := imports[pkg]; !ok {
			t.Errorf("docs/ARCHITECTURE.md draws %s, which is no package of the module", pkg)
		}
	}
}

// parseArrows reads the code block after "## Packages and arrows": lines
// "a, b ──► c, d ──► e (comment)", continued on indented lines; what is in
// parentheses is a comment. It returns each package drawn and what its
// arrows point to.
func parseArrows(doc string) (map[string][]string, error) {
	_, after, ok := strings.Cut(doc, "## Packages and arrows")
	if !ok {
		return nil, errNoBlock
	}
	_, block, ok := strings.Cut(after, "```\n")
	if !ok {
		return nil, errNoBlock
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		return nil, errNoBlock
	}
	// Join continuation lines to their entry, then drop comments.
	var entries []string
	for line := range strings.Lines(block) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.TrimSpace(line) == "":
		case line[0] == ' ' && len(entries) > 0:
			entries[len(entries)-1] += " " + line
		default:
			entries = append(entries, line)
		}
	}
	drawn := map[string][]string{}
	for _, e := range entries {
		segments := strings.Split(withoutComments(e), "──►")
		for i, seg := range segments {
			from := names(seg)
			for _, p := range from {
				if _, ok := drawn[p]; !ok {
					drawn[p] = nil
				}
			}
			if i+1 < len(segments) {
				for _, p := range from {
					drawn[p] = append(drawn[p], names(segments[i+1])...)
				}
			}
		}
	}
	return drawn, nil
}

// withoutComments drops what is in parentheses, nested ones included.
func withoutComments(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// names are the comma-separated package paths of a segment.
func names(seg string) []string {
	var out []string
	for item := range strings.SplitSeq(seg, ",") {
		if f := strings.Fields(item); len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}

type docError string

func (e docError) Error() string { return string(e) }

const errNoBlock = docError(`docs/ARCHITECTURE.md: no code block after "## Packages and arrows"`)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
