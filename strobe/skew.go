package strobe

// Skew computes the cluster-wide switch skew from the Records of several
// agents (keyed by node name), as the controller does after collecting
// them. A slice is identified by (Epoch, Seq); one seen by a single agent
// says nothing about skew and is left out. Mono times are comparable only
// within one host, so this measures a one-host cluster (or hosts whose
// CLOCK_MONOTONIC has been aligned).
func Skew(records map[string][]SliceRecord) SkewStats {
	type key struct{ epoch, seq uint64 }
	type span struct {
		n        int
		min, max int64
		due      int64
	}
	slices := make(map[key]*span)
	for _, recs := range records {
		for _, r := range recs {
			k := key{r.Epoch, r.Seq}
			s := slices[k]
			if s == nil {
				slices[k] = &span{n: 1, min: r.SwitchedMono, max: r.SwitchedMono, due: r.DueMono}
				continue
			}
			s.n++
			s.min = min(s.min, r.SwitchedMono)
			s.max = max(s.max, r.SwitchedMono)
		}
	}
	var skews, lat, idle, over []int64
	for _, s := range slices {
		if s.n >= 2 {
			skews = append(skews, s.max-s.min)
			if s.due != 0 {
				idle = append(idle, s.min-s.due)
				over = append(over, s.max-s.due)
			}
		}
	}
	for _, recs := range records {
		for _, r := range recs {
			if slices[key{r.Epoch, r.Seq}].n >= 2 {
				lat = append(lat, r.SwitchedMono-r.SentMono)
			}
		}
	}
	return SkewStats{Slices: len(skews), Skew: distOf(skews), Latency: distOf(lat), Idle: distOf(idle), Overhead: distOf(over)}
}
