package gang

// ReferenceBackfill makes an EASY-family core's backfill walk as it did
// before its short cuts (the reservation computed first, every candidate
// tried in every row): the test that they decide the same needs both.
func ReferenceBackfill(s *Scheduler) {
	if p, ok := s.policy.(*easy); ok {
		p.reference = true
	}
}
