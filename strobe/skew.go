package strobe

// SkewStats summarises how far apart the agents switched.
type SkewStats struct {
	Slices  int  // slices seen by at least two agents
	Skew    Dist // per slice: latest − earliest SwitchedMono among the agents that applied it
	Latency Dist // SwitchedMono − SentMono over every record of those slices
}

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
	}
	slices := make(map[key]*span)
	for _, recs := range records {
		for _, r := range recs {
			k := key{r.Epoch, r.Seq}
			s := slices[k]
			if s == nil {
				slices[k] = &span{n: 1, min: r.SwitchedMono, max: r.SwitchedMono}
				continue
			}
			s.n++
			s.min = min(s.min, r.SwitchedMono)
			s.max = max(s.max, r.SwitchedMono)
		}
	}
	var skews, lat []int64
	for _, s := range slices {
		if s.n >= 2 {
			skews = append(skews, s.max-s.min)
		}
	}
	for _, recs := range records {
		for _, r := range recs {
			if slices[key{r.Epoch, r.Seq}].n >= 2 {
				lat = append(lat, r.SwitchedMono-r.SentMono)
			}
		}
	}
	return SkewStats{Slices: len(skews), Skew: distOf(skews), Latency: distOf(lat)}
}
