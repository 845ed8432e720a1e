// Package sharing names how a cluster shares its processors among jobs:
// space sharing, gang scheduling, buffered coscheduling, or no
// coordination. The runtime, the API, the simulator and the CLI use its one
// Mode type and its one spelling.
package sharing

import (
	"fmt"
	"strings"
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

// ParseMode resolves a mode name; the error lists the valid ones.
func Parse(s string) (Mode, error) {
	for _, m := range Modes() {
		if strings.EqualFold(string(m), s) {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown mode %q (valid: space, gang, bcs, local)", s)
}

// TimeShared reports whether rows rotate on strobes.
func (m Mode) TimeShared() bool { return m == Gang || m == BCS }
