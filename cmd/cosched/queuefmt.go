package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/internal/slurmtime"
)

// queueField is one of squeue's % fields that cosched knows.
type queueField struct {
	header string
	value  func(j api.Job) string
}

// queueFields returns the squeue % fields cosched supports (squeue(1)).
func queueFields() map[byte]queueField {
	return map[byte]queueField{
		'i': {"JOBID", func(j api.Job) string { return strconv.FormatInt(j.ID, 10) }},
		'j': {"NAME", jobName},
		'u': {"USER", func(j api.Job) string { return orDash(j.Spec.User) }},
		't': {"ST", func(j api.Job) string { return j.State.Code() }},
		'T': {"STATE", func(j api.Job) string { return string(j.State) }},
		'M': {"TIME", func(j api.Job) string { return slurmtime.Format(j.Elapsed.D) }},
		'l': {"TIME_LIMIT", func(j api.Job) string { return slurmtime.Format(j.Spec.TimeLimit.D) }},
		'D': {"NODES", nodeCount},
		'C': {"CPUS", func(j api.Job) string { return strconv.Itoa(j.Spec.Processors) }},
		'R': {"NODELIST(REASON)", nodesOrReason},
		'N': {"NODELIST", func(j api.Job) string { return strings.Join(distinct(j.Nodes), ",") }},
		'r': {"REASON", func(j api.Job) string { return orDash(j.Reason) }},
		'P': {"PARTITION", func(api.Job) string { return "-" }}, // one partition: the cluster
	}
}

// queueFieldLetters lists the supported fields for help and errors.
const queueFieldLetters = "%i %j %u %t %T %M %l %D %C %R %N %r %P"

// queueColumn is one parsed % item of a format: a field, or literal text.
type queueColumn struct {
	literal string
	field   *queueField
	width   int  // 0: as wide as needed
	right   bool // %.N: right-justified
}

// parseQueueFormat reads an squeue format: %[.]WIDTH<letter> items and
// literal text. A value longer than its width is cut, as squeue does.
func parseQueueFormat(s string) ([]queueColumn, error) {
	fields := queueFields()
	var cols []queueColumn
	for i := 0; i < len(s); {
		if s[i] != '%' {
			j := strings.IndexByte(s[i:], '%')
			if j < 0 {
				j = len(s) - i
			}
			cols = append(cols, queueColumn{literal: s[i : i+j]})
			i += j
			continue
		}
		i++
		var c queueColumn
		if i < len(s) && s[i] == '.' {
			c.right = true
			i++
		} else if i < len(s) && s[i] == '-' { // left, the default, said explicitly
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i > start {
			w, err := strconv.Atoi(s[start:i])
			if err != nil || w > 1000 {
				return nil, fmt.Errorf("width %q: want 0..1000", s[start:i])
			}
			c.width = w
		}
		if i >= len(s) {
			return nil, fmt.Errorf("%q ends inside a %% item (fields: %s)", s, queueFieldLetters)
		}
		if s[i] == '%' {
			cols = append(cols, queueColumn{literal: "%"})
			i++
			continue
		}
		f, ok := fields[s[i]]
		if !ok {
			return nil, fmt.Errorf("%%%c: unknown field (known: %s)", s[i], queueFieldLetters)
		}
		c.field = &f
		cols = append(cols, c)
		i++
	}
	return cols, nil
}

// writeQueueFormat prints jobs with a parsed format, with a header line
// unless noHeader.
func writeQueueFormat(w io.Writer, cols []queueColumn, jobs []api.Job, noHeader bool) {
	line := func(value func(f *queueField) string) {
		var b strings.Builder
		for _, c := range cols {
			if c.field == nil {
				b.WriteString(c.literal)
				continue
			}
			b.WriteString(pad(value(c.field), c.width, c.right))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	if !noHeader {
		line(func(f *queueField) string { return f.header })
	}
	for _, j := range jobs {
		line(func(f *queueField) string { return f.value(j) })
	}
}

// pad fits s to width (0: unchanged): cut if longer, else padded on the
// right (left-justified) or the left (right-justified).
func pad(s string, width int, right bool) string {
	if width == 0 {
		return s
	}
	r := []rune(s)
	if len(r) > width {
		return string(r[:width])
	}
	fill := strings.Repeat(" ", width-len(r))
	if right {
		return fill + s
	}
	return s + fill
}

// jobName is the job's name, else its program, else what a benchmark job
// runs, so NAME is never empty.
func jobName(j api.Job) string {
	switch {
	case j.Spec.Name != "":
		return j.Spec.Name
	case len(j.Spec.Command) > 0:
		return j.Spec.Command[0]
	case j.Spec.Bench != "":
		return "bench:" + j.Spec.Bench
	}
	return "-"
}

func nodeCount(j api.Job) string {
	if j.State == api.Pending {
		return "-"
	}
	return strconv.Itoa(len(distinct(j.Nodes)))
}

func nodesOrReason(j api.Job) string {
	if j.State == api.Pending || j.Reason != "" && j.State.Done() {
		return "(" + j.Reason + ")"
	}
	return strings.Join(distinct(j.Nodes), ",")
}

// parseStates reads -t/--states: squeue's codes or names, comma-separated,
// or "all".
func parseStates(s string) (map[api.State]bool, error) {
	all := []api.State{api.Pending, api.Running, api.Completed, api.Failed, api.Cancelled, api.Timeout}
	want := map[api.State]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.ToUpper(strings.TrimSpace(item))
		if item == "ALL" {
			for _, st := range all {
				want[st] = true
			}
			continue
		}
		found := false
		for _, st := range all {
			if item == string(st) || item == st.Code() || st == api.Cancelled && item == "CANCELED" {
				want[st], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("state %q: want PD, R, CD, F, CA, TO (or PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT), or all", item)
		}
	}
	return want, nil
}
