package plot

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/textvalue"
)

// Options are a plotting run as a command line writes it.
type Options struct {
	In      string // the sweep's results: a file, or a directory (sweep.ReadResults)
	Out     string // the directory for the figures (WriteFiles)
	Formats string // file formats, comma-separated (Formats)
}

// Parse checks o, reporting every problem at once keyed by field, and
// returns its formats, lowercased, repeats dropped.
func (o Options) Parse() ([]string, error) {
	var errs []error
	if o.In == "" {
		errs = append(errs, fielderr.New("In", nil, "required: the sweep's results file or directory"))
	}
	if o.Out == "" {
		errs = append(errs, fielderr.New("Out", nil, "required: the directory for the figures"))
	}
	formats, e := textvalue.List("Formats", o.Formats, func(s string) (string, error) {
		s = strings.ToLower(s)
		if !slices.Contains(Formats(), s) {
			return "", fmt.Errorf("unknown format (valid: %s)", strings.Join(Formats(), ", "))
		}
		return s, nil
	})
	return formats, errors.Join(append(errs, e...)...)
}

// String says what s skipped and why: "NAME: REASON" for one figure,
// "N KIND figures (NAME, …): REASON" for several.
func (s Skip) String() string {
	what := s.Names[0]
	if len(s.Names) > 1 {
		what = fmt.Sprintf("%d %s figures (%s, …)", len(s.Names), s.Kind, s.Names[0])
	}
	return what + ": " + s.Reason
}
