package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Part is one input of Merge: a results file's content and its name.
type Part struct {
	Name    string
	Results *Results
}

// ReadParts reads results files; a directory stands for the shard files in
// it (shard-*.json, in name order). It fails if a directory holds none,
// and stops when ctx is cancelled.
func ReadParts(ctx context.Context, inputs []string) ([]Part, error) {
	var parts []Part
	for _, in := range inputs {
		st, err := os.Stat(in)
		if err != nil {
			return nil, fmt.Errorf("sweep: %w", err)
		}
		files := []string{in}
		if st.IsDir() {
			files, err = filepath.Glob(filepath.Join(in, "shard-*.json"))
			if err != nil {
				return nil, fmt.Errorf("sweep: %w", err)
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("sweep: %s: no shard files (shard-*.json) in the directory", in)
			}
			sort.Strings(files)
		}
		for _, f := range files {
			r, err := ReadFile(ctx, f)
			if err != nil {
				return nil, err
			}
			parts = append(parts, Part{Name: f, Results: r})
		}
	}
	return parts, nil
}

// Merge combines shards into the results of the whole sweep, exactly as one
// unsharded run would have written them. The parts must share the spec, the
// machine and the total, and their rows must cover the indices 0…total−1
// exactly once; the error lists every problem, naming the missing or
// repeated indices and the files involved.
func Merge(parts []Part) (*Results, error) {
	if len(parts) == 0 {
		return nil, errors.New("sweep: merge: no input")
	}
	first := parts[0]
	var errs []error
	for _, p := range parts[1:] {
		if d := jsonDiff(first.Results.Spec, p.Results.Spec); d != "" {
			errs = append(errs, fmt.Errorf("%s: its spec differs from %s's: %s", p.Name, first.Name, d))
		}
		if d := jsonDiff(first.Results.Machine, p.Results.Machine); d != "" {
			errs = append(errs, fmt.Errorf("%s: its machine differs from %s's: %s", p.Name, first.Name, d))
		}
		if p.Results.Total != first.Results.Total {
			errs = append(errs, fmt.Errorf("%s: a sweep of %d points, but %s is one of %d", p.Name, p.Results.Total, first.Name, first.Results.Total))
		}
	}
	if len(errs) > 0 {
		return nil, mergeError(errs)
	}
	total := first.Results.Total
	owners := make([][]string, total)
	rows := make([]Row, 0, total)
	for _, p := range parts {
		for _, row := range p.Results.Rows {
			if row.Index < 0 || row.Index >= total {
				errs = append(errs, fmt.Errorf("%s: index %d outside 0-%d", p.Name, row.Index, total-1))
				continue
			}
			if len(owners[row.Index]) == 0 {
				rows = append(rows, row)
			}
			owners[row.Index] = append(owners[row.Index], p.Name)
		}
	}
	var missing []int
	dups := map[string][]int{} // files → indices they all hold
	for i, o := range owners {
		switch {
		case len(o) == 0:
			missing = append(missing, i)
		case len(o) > 1:
			key := strings.Join(o, ", ")
			dups[key] = append(dups[key], i)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing %s%s", ranges(missing), missingShards(parts, missing)))
	}
	for _, files := range slices.Sorted(maps.Keys(dups)) {
		errs = append(errs, fmt.Errorf("duplicated %s: in %s", ranges(dups[files]), files))
	}
	if len(errs) > 0 {
		return nil, mergeError(errs)
	}
	slices.SortFunc(rows, func(a, b Row) int { return a.Index - b.Index })
	var warnings []string
	for _, p := range parts {
		warnings = append(warnings, p.Results.Warnings...)
	}
	return &Results{Spec: first.Results.Spec, Machine: first.Results.Machine, Total: total, Rows: rows, Warnings: warnings}, nil
}

func mergeError(errs []error) error {
	if len(errs) == 1 {
		return fmt.Errorf("sweep: merge: %w", errs[0])
	}
	return fmt.Errorf("sweep: merge: %d problems:\n%w", len(errs), errors.Join(errs...))
}

// missingShards names the shards absent from parts when every part is a
// shard of the same n and the missing indices are exactly those shards.
func missingShards(parts []Part, missing []int) string {
	n := 0
	have := map[int]bool{}
	for _, p := range parts {
		s, err := ParseShard(p.Results.Shard)
		if err != nil || s.Whole() || n != 0 && s.N != n {
			return ""
		}
		n = s.N
		have[s.K] = true
	}
	var absent []string
	want := map[int]bool{}
	for k := 1; k <= n; k++ {
		if !have[k] {
			absent = append(absent, fmt.Sprintf("%d/%d", k, n))
			want[k] = true
		}
	}
	for _, i := range missing {
		if !want[i%n+1] {
			return ""
		}
	}
	if len(absent) == 0 {
		return ""
	}
	return fmt.Sprintf(" (no input holds shard %s)", strings.Join(absent, ", "))
}

// ranges renders sorted indices compactly: [3 4 5 9] → "3-5, 9". Past 12
// runs it stops with "… (N in all)".
func ranges(idx []int) string {
	const maxRuns = 12
	var b strings.Builder
	runs := 0
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if runs == maxRuns {
			fmt.Fprintf(&b, ", … (%d in all)", len(idx))
			break
		}
		if runs > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(idx[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(idx[j]))
		}
		runs++
		i = j + 1
	}
	return b.String()
}

// jsonDiff compares two values by their JSON, field by field, and describes
// the fields that differ ("jobs 30, not 20"); "" when equal.
func jsonDiff(want, got any) string {
	a, aerr := json.Marshal(want)
	b, berr := json.Marshal(got)
	if aerr != nil || berr != nil {
		return "cannot compare"
	}
	if bytes.Equal(a, b) {
		return ""
	}
	var am, bm map[string]json.RawMessage
	if json.Unmarshal(a, &am) != nil || json.Unmarshal(b, &bm) != nil {
		return fmt.Sprintf("%s, not %s", b, a)
	}
	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !bytes.Equal(am[k], bm[k]) {
			diffs = append(diffs, fmt.Sprintf("%s %s, not %s", k, orNone(bm[k]), orNone(am[k])))
		}
	}
	return strings.Join(diffs, "; ")
}

func orNone(raw json.RawMessage) string {
	if raw == nil {
		return "(none)"
	}
	return string(raw)
}

// ReadResults reads a sweep's results from path: a results file, a
// directory's results.json, or else the directory's shard files merged
// (they must make the whole sweep). It stops when ctx is cancelled.
func ReadResults(ctx context.Context, path string) (*Results, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if !st.IsDir() {
		return ReadFile(ctx, path)
	}
	file := filepath.Join(path, "results.json")
	if _, err := os.Stat(file); err == nil {
		return ReadFile(ctx, file)
	}
	parts, err := ReadParts(ctx, []string{path})
	if err != nil {
		return nil, fmt.Errorf("%s: no results.json, and %w", path, err)
	}
	return Merge(parts)
}
