// Package textvalue reads settings as command lines and job scripts write
// them: comma-separated lists and memory sizes with units. A bad item is a
// fielderr.Error naming its field, so that a command names its flag.
package textvalue

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cosched/cosched/internal/bytesize"
	"github.com/cosched/cosched/internal/fielderr"
)

// Items splits a comma-separated value, trimming blanks and dropping empty
// items.
func Items(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// List parses every item of a comma-separated value of field with parse,
// drops repeats (keeping the order) and reports each bad item (`field
// "item": reason`). An empty list is an error.
func List[T comparable](field, s string, parse func(string) (T, error)) ([]T, []error) {
	var out []T
	var errs []error
	seen := map[T]bool{}
	items := Items(s)
	if len(items) == 0 {
		return nil, []error{fielderr.New(field, nil, "no value given")}
	}
	for _, item := range items {
		v, err := parse(item)
		if err != nil {
			errs = append(errs, fielderr.New(field, strconv.Quote(item), "%v", err))
			continue
		}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out, errs
}

// Names resolves a comma-separated list of names with lookup, keeping
// their order and dropping repeats. One error names every unknown name
// ("unknown policies "a", "b" (valid: …)", one and many naming the kind);
// a list naming none is an error too.
func Names[T comparable](list, one, many, valid string, lookup func(string) (T, error)) ([]T, error) {
	var out []T
	var unknown []string
	for _, name := range Items(list) {
		v, err := lookup(name)
		switch {
		case err != nil:
			unknown = append(unknown, strconv.Quote(name))
		case !slices.Contains(out, v):
			out = append(out, v)
		}
	}
	switch {
	case len(unknown) == 1:
		return nil, fmt.Errorf("unknown %s %s (valid: %s)", one, unknown[0], valid)
	case len(unknown) > 1:
		return nil, fmt.Errorf("unknown %s %s (valid: %s)", many, strings.Join(unknown, ", "), valid)
	case len(out) == 0:
		return nil, fmt.Errorf("no %s given (valid: %s)", one, valid)
	}
	return out, nil
}

// Size reads a memory size with units (bytesize.Parse, as humanize.ParseBytes): 256MB is
// 256×10^6 bytes, 256MiB 256×2^20.
func Size(s string) (int64, error) {
	n, err := bytesize.Parse(s)
	if err != nil {
		return 0, errors.New("not a memory size (e.g. 256MB, 1GiB, 0)")
	}
	if n > math.MaxInt64 {
		return 0, errors.New("too large")
	}
	return int64(n), nil
}

// Bandwidth reads a network bandwidth in bytes per second as a size with
// units (Size); "0" is unlimited, and any other value is at least 1 byte.
func Bandwidth(s string) (float64, error) {
	if s == "0" {
		return 0, nil
	}
	bw, err := Size(s)
	if err != nil || bw < 1 {
		return 0, errors.New("want a size per second (e.g. 100MB) or 0")
	}
	return float64(bw), nil
}

// Duration reads a Go duration (50ms, 1m30s); the error of anything else
// gives an example.
func Duration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration (e.g. 50ms)")
	}
	return d, nil
}
