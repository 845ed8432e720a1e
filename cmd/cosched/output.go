package main

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

	"github.com/spf13/cobra"
)

// maxOutputLine bounds one line of a rank's output in the merged view;
// longer lines are split.
const maxOutputLine = 64 << 10

func newOutputCmd() *cobra.Command {
	var stateDir string
	var label, stderr bool
	cmd := &cobra.Command{
		Use:   "output [--label] [--err] JOB",
		Short: "Print a job's output: every rank's, in rank order, optionally labelled with its rank",
		Long: `Print a job's output, read from the ranks' files
(<state dir>/agents/<agent>/jobs/<id>/rank-<rank>.out, or .err with --err)
of every agent whose state directory is under this machine's state
directory: a cluster started with "cosched cluster up", or agents sharing a
file system. Ranks are printed in rank order; with --label every line starts
with its rank and a colon, as srun --label prints it.`,
		Example: `  cosched output --label 12
  cosched output --err 12`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return usageError{fmt.Errorf("job %q: want a job id", args[0])}
			}
			dir, err := stateDirFor(stateDir)
			if err != nil {
				return err
			}
			ext := "out"
			if stderr {
				ext = "err"
			}
			return printOutput(cmd.OutOrStdout(), dir, id, ext, label)
		},
	}
	cmd.Flags().BoolVarP(&label, "label", "l", false, "prefix each line with its rank (srun --label)")
	cmd.Flags().BoolVar(&stderr, "err", false, "print the ranks' standard error instead of their standard output")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "state directory of the cluster (default: $COSCHED_STATE_DIR, else ~/.local/state/cosched)")
	return cmd
}

var rankFile = regexp.MustCompile(`^rank-(\d+)\.(out|err)$`)

// printOutput writes job id's rank files (ext: out or err) found under
// dir/agents/*/jobs/id in rank order.
func printOutput(w io.Writer, dir string, id int64, ext string, label bool) error {
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
		m := rankFile.FindStringSubmatch(filepath.Base(f))
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
