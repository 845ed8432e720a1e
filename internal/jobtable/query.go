package jobtable

import (
	"errors"
	"io"
	"slices"
	"strconv"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/internal/fielderr"
)

// Query is a job listing as squeue's options give it (cosched queue's
// flags): Format (-o, ParseFormat), Jobs (-j, ParseJobList) and States
// (-t, ParseStates) as text, "" for none; All adds finished jobs,
// NoHeader drops the header line, Long adds the cgroup accounting.
type Query struct {
	Format, Jobs, States string
	All, NoHeader, Long  bool
}

// Listing is a parsed Query: which jobs it shows, and how.
type Listing struct {
	query   Query
	filter  Filter
	columns []Column // nil: Queue's table
}

// Parse reads the query's texts, reporting every problem at once, each a
// *fielderr.Error keyed by its field.
func (q Query) Parse() (Listing, error) {
	l := Listing{query: q}
	var errs []error
	var err error
	bad := func(field, text string, err error) {
		errs = append(errs, fielderr.New(field, strconv.Quote(text), "%v", err))
	}
	if q.Format != "" {
		if l.columns, err = ParseFormat(q.Format); err != nil {
			bad("Format", q.Format, err)
		}
	}
	if q.Jobs != "" {
		if l.filter.IDs, err = ParseJobList(q.Jobs); err != nil {
			bad("Jobs", q.Jobs, err)
		}
	}
	if q.States != "" {
		if l.filter.States, err = ParseStates(q.States); err != nil {
			bad("States", q.States, err)
		}
	}
	return l, errors.Join(errs...)
}

// Finished reports whether the listing may show finished jobs, which the
// API lists only when asked for all (Filter.Finished).
func (l Listing) Finished() bool { return l.filter.Finished(l.query.All) }

// Write writes the jobs of jobs the listing selects, as its format says
// (Queue's table without one).
func (l Listing) Write(w io.Writer, jobs []api.Job) {
	jobs = slices.DeleteFunc(slices.Clone(jobs), func(j api.Job) bool { return !l.filter.Keep(j) })
	if l.columns == nil {
		Queue(w, jobs, l.query.NoHeader, l.query.Long)
	} else {
		WriteFormat(w, l.columns, jobs, l.query.NoHeader)
	}
}
