package bench

import "time"

// Draw returns process proc's uniform draw in [0, 1) for iteration iter of
// a job whose draws are keyed by seed. It is counter-based (SplitMix64
// finalisation of a mix of the three numbers), so a draw does not depend on
// the order in which draws are asked for: the simulator's execution models
// and the benchmark ranks of the runtime all get the same bits for the same
// (seed, proc, iter).
//
// The bits are part of cosched's reproducibility: simulated results and
// measured-versus-simulated comparisons depend on them. Do not change it.
func Draw(seed uint64, proc, iter int) float64 {
	x := seed ^ (uint64(proc)+1)*0x9e3779b97f4a7c15 ^ (uint64(iter)+1)*0xbf58476d1ce4e5b9
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// Compute returns process proc's compute time in iteration iter of a job
// with this template whose draws are keyed by seed:
// t.ComputeTime(Draw(seed, proc, iter)), uniform in (g − v/2, g + v/2).
func (t Template) Compute(seed uint64, proc, iter int) time.Duration {
	return t.ComputeTime(Draw(seed, proc, iter))
}
