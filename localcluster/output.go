package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
)

// maxOutputLine bounds one line of a rank's output in the merged view;
// longer lines are split.
const maxOutputLine = 64 << 10

// rankFile is a rank's output file name, compiled on first use (the CLI
// links this package for every call).
var rankFile = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^rank-(\d+)\.(out|err)$`) })

// WriteJobOutput writes the output of job id's ranks to w, in rank order:
// their files rank-N.ext (ext: out or err) under dir/agents/*/jobs/id, a
// state directory's agents (a local cluster's, or agents sharing a file
// system). With label every line starts with its rank and a colon, as
// srun --label prints it.
func WriteJobOutput(w io.Writer, dir string, id int64, ext string, label bool) error {
	files, err := filepath.Glob(filepath.Join(dir, "agents", "*", "jobs", strconv.FormatInt(id, 10), "rank-*."+ext))
	if err != nil {
		return err
	}
	type rankOut struct {
		rank int
		path string
	}
	var ranks []rankOut
	for _, f := range files {
		m := rankFile().FindStringSubmatch(filepath.Base(f))
		if m == nil {
			continue
		}
		r, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		ranks = append(ranks, rankOut{r, f})
	}
	if len(ranks) == 0 {
		return fmt.Errorf("job %d: no rank output under %s (the output stays on the agent that ran each rank)", id, filepath.Join(dir, "agents", "*", "jobs"))
	}
	slices.SortFunc(ranks, func(a, b rankOut) int { return a.rank - b.rank })
	bw := bufio.NewWriter(w)
	for _, r := range ranks {
		if err := copyLabelled(bw, r.path, r.rank, label); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func copyLabelled(w *bufio.Writer, path string, rank int, label bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if !label {
		_, err := io.Copy(w, f)
		return err
	}
	prefix := strconv.Itoa(rank) + ": "
	r := bufio.NewReaderSize(f, maxOutputLine)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			w.WriteString(prefix)
			w.Write(line)
			if line[len(line)-1] != '\n' {
				w.WriteByte('\n')
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return fmt.Errorf("%s: %w", path, err)
		}
	}
}
