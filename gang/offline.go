package gang

import (
	"fmt"
	"time"
)

// SetOffline takes columns out of service (offline) or puts them back, at
// now: a node left the cluster, or returned. An offline column is never
// allocated. A running job that holds an offline column keeps it until it
// is reported Finished (its node is gone: the caller ends it); the column
// then stays out of service. Queued jobs keep waiting; conservative
// reservations are recomputed for the new capacity.
//
// The machine's Processors is the most columns there can be; Online tells
// how many are in service now.
func (s *Scheduler) SetOffline(cols []int, offline bool, now time.Duration) error {
	for _, c := range cols {
		if c < 0 || c >= s.cfg.Machine.Processors {
			return fmt.Errorf("gang: column %d outside the machine (%d columns)", c, s.cfg.Machine.Processors)
		}
	}
	if err := s.advance(now); err != nil {
		return err
	}
	for _, c := range cols {
		word, bit := c/64, uint64(1)<<(c%64)
		if (s.offline[word]&bit != 0) == offline {
			continue // already so
		}
		if offline {
			s.offline[word] |= bit
			s.online--
			for r := range s.rows {
				set := &s.rows[r].cols
				if set.words[word]&bit != 0 {
					set.words[word] &^= bit
					set.free--
				}
			}
			continue
		}
		s.offline[word] &^= bit
		s.online++
		for r := range s.rows {
			if !s.held(r, c) {
				set := &s.rows[r].cols
				set.words[word] |= bit
				set.free++
			}
		}
	}
	s.policy.capacityChanged(s)
	return nil
}

// Online returns the number of columns in service.
func (s *Scheduler) Online() int { return s.online }

func (s *Scheduler) isOffline(c int) bool { return s.offline[c/64]&(1<<(c%64)) != 0 }

// onlineOnly returns the columns of cols that are in service.
func (s *Scheduler) onlineOnly(cols []int) []int {
	if s.online == s.cfg.Machine.Processors {
		return cols // nothing is offline: the common case, without a look per column
	}
	for _, c := range cols {
		if s.isOffline(c) {
			out := make([]int, 0, len(cols))
			for _, c := range cols {
				if !s.isOffline(c) {
					out = append(out, c)
				}
			}
			return out
		}
	}
	return cols
}

// held reports whether a running job of row r holds column c.
func (s *Scheduler) held(r, c int) bool {
	for _, j := range s.rows[r].running {
		for _, x := range j.cols {
			if x == c {
				return true
			}
		}
	}
	return false
}
