package gang

import (
	"fmt"
	"time"
)

// SetColumnMemory sets the memory of columns, in bytes per column, at
// now: a node advertised what it really has. It overrides
// Machine.MemoryPerProcessor for those columns; 0 gives them the
// machine's value back (0 there too: unlimited). Jobs already running
// keep their columns even if these are now overcommitted; placement and
// Explain use the new capacities from now on.
func (s *Scheduler) SetColumnMemory(cols []int, bytes int64, now time.Duration) error {
	if bytes < 0 {
		return fmt.Errorf("gang: column memory %d: must not be negative", bytes)
	}
	for _, c := range cols {
		if c < 0 || c >= s.cfg.Machine.Processors {
			return fmt.Errorf("gang: column %d outside the machine (%d columns)", c, s.cfg.Machine.Processors)
		}
	}
	if err := s.advance(now); err != nil {
		return err
	}
	if s.colCap == nil {
		s.colCap = make([]int64, s.cfg.Machine.Processors)
	}
	for _, c := range cols {
		switch {
		case s.colCap[c] == 0 && bytes > 0:
			s.capped++
		case s.colCap[c] > 0 && bytes == 0:
			s.capped--
		}
		s.colCap[c] = bytes
	}
	s.policy.capacityChanged(s)
	return nil
}

// columnMemory is a column's memory: its own if set, else the machine's
// (0: unlimited).
func (s *Scheduler) columnMemory(c int) int64 {
	if s.colCap != nil && s.colCap[c] > 0 {
		return s.colCap[c]
	}
	return s.cfg.Machine.MemoryPerProcessor
}
