// Package sharing names how a cluster shares its processors among jobs:
// space sharing, gang scheduling, buffered coscheduling, or no
// coordination. The runtime, the API, the simulator and the CLI use its one
// Mode type and its one spelling.
package sharing

import (
	"fmt"
	"strings"
	"time"
)

// Mode is how the cluster shares processors.
type Mode string

// The modes. One code path: the mode changes behaviour, not structure.
const (
	// Space: MPL 1; jobs run to completion on their processors (fcfs, easy,
	// easy-sjbf or conservative backfilling on their time limits).
	Space Mode = "space"
	// Gang: rows of the matrix rotate every slice on the controller's
	// strobes; each agent stops the previous row's ranks and continues the
	// new row's. Jobs also run in empty slots of other rows (alternative
	// scheduling).
	Gang Mode = "gang"
	// BCS: buffered coscheduling. Rows rotate as in gang mode, but without
	// alternative scheduling; the relays buffer messages per slice and
	// deliver them after the strobe, and an agent whose running rank is
	// blocked in communication lends its processor to another local rank
	// for the rest of the slice (process-level slot reuse).
	BCS Mode = "bcs"
	// Local: no coordination: every placed rank runs and Linux schedules
	// them.
	Local Mode = "local"
)

// Modes lists the modes.
func Modes() []Mode { return []Mode{Space, Gang, BCS, Local} }

// Parse resolves a mode's name, in any case; the error lists the valid
// ones.
func Parse(s string) (Mode, error) {
	for _, m := range Modes() {
		if strings.EqualFold(string(m), s) {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown mode %q (valid: space, gang, bcs, local)", s)
}

// ParseFormer is Parse that also reads the simulator's former names, bf
// (space sharing with backfilling: Space) and bgs (backfilling gang
// scheduling: Gang), as flags and results files written before may hold
// them. wasFormer tells the caller to warn that the name is going away.
func ParseFormer(s string) (m Mode, wasFormer bool, err error) {
	// The simulator's names from before the runtime and the simulator
	// shared one spelling.
	switch strings.ToLower(s) {
	case "bf":
		return Space, true, nil
	case "bgs":
		return Gang, true, nil
	}
	m, err = Parse(s)
	return m, false, err
}

// FormerWarning is the warning for a former name that ParseFormer read as
// m.
func FormerWarning(name string, m Mode) string {
	return fmt.Sprintf("mode %q is the former name of %s; write %s (the former names bf and bgs will stop working)", name, m, m)
}

// TimeShared reports whether rows rotate on strobes.
func (m Mode) TimeShared() bool { return m == Gang || m == BCS }

// The range of a time-shared mode's slice: the strobe path is measured
// down to a millisecond; a slice of an hour is already no time sharing.
const (
	MinSlice = time.Millisecond
	MaxSlice = time.Hour
)
