package gang

// EagerReservation makes an EASY-family core compute the head's
// reservation before its backfill walk, as it did before it was computed
// lazily: the test that the two decide the same needs both.
func EagerReservation(s *Scheduler) {
	if p, ok := s.policy.(*easy); ok {
		p.eager = true
	}
}
