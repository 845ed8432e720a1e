package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	// linkRE matches an inline Markdown link or image: [text](target).
	linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// codeSpanRE matches an inline code span, whose text is not Markdown.
	codeSpanRE = regexp.MustCompile("`[^`]*`")
	// headingLinkRE matches a link inside a heading, rendered as its text.
	headingLinkRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// markdownLine is a line of a Markdown file outside its code blocks.
type markdownLine struct {
	n    int
	text string
}

// proseLines returns the lines of the Markdown file at path that are not
// inside fenced code blocks.
func proseLines(path string) ([]markdownLine, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []markdownLine
	fenced := false
	for i, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, markdownLine{i + 1, l})
		}
	}
	return out, nil
}

// slug is GitHub's anchor for a heading: its rendered text lower-cased,
// punctuation dropped, spaces turned into hyphens.
func slug(heading string) string {
	heading = headingLinkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of the headings of the Markdown file at
// path, numbered as GitHub numbers repeated ones (x, x-1, x-2, …).
func anchors(path string) (map[string]bool, error) {
	lines, err := proseLines(path)
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		h := strings.TrimLeft(t, "#")
		if h == t || !strings.HasPrefix(h, " ") {
			continue
		}
		s := slug(strings.TrimSpace(h))
		if k := seen[s]; k > 0 {
			out[fmt.Sprintf("%s-%d", s, k)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out, nil
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Benchmark jobs: `cosched submit --bench`":                      "benchmark-jobs-cosched-submit---bench",
		"Online algorithms for networks of workstations (Arndt et al.)": "online-algorithms-for-networks-of-workstations-arndt-et-al",
		"5. A program with `comm`":                                      "5-a-program-with-comm",
		"Messaging (`comm`, `comm/relay`) and BCS":                      "messaging-comm-commrelay-and-bcs",
		"On a [real](x.md) cluster":                                     "on-a-real-cluster",
	} {
		if got := slug(strings.ReplaceAll(in, "`", "")); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLinks checks every relative link of README.md and docs/*.md: its
// file or directory exists, and its #anchor is a heading of the target.
func TestLinks(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"../README.md"}, pages...)
	cache := map[string]map[string]bool{}
	checked := 0
	for _, page := range pages {
		lines, err := proseLines(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(l.text, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				where := fmt.Sprintf("%s:%d: link %s", filepath.Base(page), l.n, target)
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s: %s does not exist", where, path)
						continue
					}
				}
				checked++
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(path, ".md") {
					t.Errorf("%s: an anchor into a file that is not Markdown", where)
					continue
				}
				if cache[path] == nil {
					if cache[path], err = anchors(path); err != nil {
						t.Fatal(err)
					}
				}
				if !cache[path][anchor] {
					t.Errorf("%s: %s has no heading with anchor #%s", where, path, anchor)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: is the link pattern broken?")
	}
}
