package api

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cosched/cosched/telemetry"
)

// RecordID names a slice record: the controller incarnation that sent the
// slice (its epoch: when it took the lead, in Unix nanoseconds, so a later
// leader's is larger) and the slice's number in it. An agent applies
// slices in increasing RecordID order, so "after id" is the records an
// agent added since the one named id.
type RecordID struct {
	Epoch uint64
	Seq   uint64
}

// IDOf is the RecordID of a record.
func IDOf(r telemetry.SliceRecord) RecordID { return RecordID{r.Epoch, r.Seq} }

// Compare orders RecordIDs: by epoch, then by slice number.
func (id RecordID) Compare(o RecordID) int {
	return cmp.Or(cmp.Compare(id.Epoch, o.Epoch), cmp.Compare(id.Seq, o.Seq))
}

// String is "EPOCH.SEQ".
func (id RecordID) String() string {
	return strconv.FormatUint(id.Epoch, 10) + "." + strconv.FormatUint(id.Seq, 10)
}

// ParseRecordID reads "EPOCH.SEQ".
func ParseRecordID(s string) (RecordID, error) {
	e, q, ok := strings.Cut(s, ".")
	epoch, err1 := strconv.ParseUint(e, 10, 64)
	seq, err2 := strconv.ParseUint(q, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return RecordID{}, fmt.Errorf("%q: want EPOCH.SEQ (two numbers)", s)
	}
	return RecordID{epoch, seq}, nil
}

// Cursor is what a reader of GET /v1/nodes?stats=1&since=CURSOR already
// has: per agent, the newest slice record it was given. A reader passes
// back the report's Cursor unchanged; an agent the cursor does not name is
// read in full (its last records=N records).
type Cursor map[string]RecordID

// String is "NODE:EPOCH.SEQ,…", sorted by node ("" when empty).
func (c Cursor) String() string {
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(c)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(c[name].String())
	}
	return b.String()
}

// ParseCursor reads a Cursor's String ("" is the empty cursor).
func ParseCursor(s string) (Cursor, error) {
	c := Cursor{}
	if s == "" {
		return c, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		i := strings.LastIndexByte(part, ':')
		if i <= 0 {
			return nil, fmt.Errorf("%q: want NODE:EPOCH.SEQ", part)
		}
		id, err := ParseRecordID(part[i+1:])
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", part[:i], err)
		}
		if _, dup := c[part[:i]]; dup {
			return nil, fmt.Errorf("node %s given twice", part[:i])
		}
		c[part[:i]] = id
	}
	return c, nil
}

// Behind lists the agents of a report whose newest slice is older than
// what the cursor says the reader has: their history went backwards (an
// agent restarted and has applied no slice yet, or follows a controller
// whose clock is behind). Their records of before are gone; the reader
// must drop what it has and read everything again, with no cursor.
func (c Cursor) Behind(r NodesReport) []string {
	var out []string
	for _, n := range r.Nodes {
		had, ok := c[n.Name]
		if !ok || n.Stats == nil {
			continue
		}
		if (RecordID{n.Stats.Strobe.Epoch, n.Stats.Strobe.LastSeq}).Compare(had) < 0 {
			out = append(out, n.Name)
		}
	}
	return out
}
