package closed

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Estimate is a mean over replications and the half-width of its 95 %
// confidence interval: the true mean lies in Mean ± HalfWidth with 95 %
// confidence.
type Estimate struct {
	Mean      float64 `json:"mean"`
	HalfWidth float64 `json:"half_width"`
}

// TQuantile returns the p-quantile of Student's t distribution with df
// degrees of freedom (df ≥ 1).
func TQuantile(p float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
}

// Estimate95 returns the sample mean of xs and the half-width of its 95 %
// Student-t confidence interval, t(0.975, n−1) · s / √n with s the sample
// standard deviation. It needs at least two values.
func Estimate95(xs []float64) (Estimate, error) {
	n := len(xs)
	if n < 2 {
		return Estimate{}, fmt.Errorf("closed: a confidence interval needs at least 2 replications, have %d", n)
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(n)
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	return Estimate{Mean: mean, HalfWidth: TQuantile(0.975, n-1) * sd / math.Sqrt(float64(n))}, nil
}

// Summary is one (policy, N) point over its replications.
type Summary struct {
	Response   Estimate `json:"mean_response"`
	Cycle      Estimate `json:"mean_cycle"`
	Throughput Estimate `json:"throughput"`
	CPUUtil    Estimate `json:"cpu_util"`
	IOUtil     Estimate `json:"io_util"`
}

// Summarize estimates each metric from replications (at least two).
func Summarize(reps []Result) (Summary, error) {
	var s Summary
	for _, m := range []struct {
		dst *Estimate
		get func(r *Result) float64
	}{
		{&s.Response, func(r *Result) float64 { return r.MeanResponse }},
		{&s.Cycle, func(r *Result) float64 { return r.MeanCycle }},
		{&s.Throughput, func(r *Result) float64 { return r.Throughput }},
		{&s.CPUUtil, func(r *Result) float64 { return r.CPUUtil }},
		{&s.IOUtil, func(r *Result) float64 { return r.IOUtil }},
	} {
		xs := make([]float64, len(reps))
		for i := range reps {
			xs[i] = m.get(&reps[i])
		}
		e, err := Estimate95(xs)
		if err != nil {
			return Summary{}, err
		}
		*m.dst = e
	}
	return s, nil
}

// Gains are a policy's relative gains over FCFS at the same N, from the
// means over replications (fractions; 0.1 is 10 %):
//
//	DRT = (RT_fcfs − RT_p) / RT_fcfs   decrease in mean response time
//	DK  = (K_fcfs − K_p) / K_fcfs      decrease in mean cycle time
//	DR  = (R_p − R_fcfs) / R_fcfs      increase in throughput
type Gains struct {
	DRT float64 `json:"d_rt"`
	DK  float64 `json:"d_k"`
	DR  float64 `json:"d_r"`
}

// GainsOver computes p's gains over the FCFS summary fcfs.
func GainsOver(fcfs, p Summary) Gains {
	return Gains{
		DRT: (fcfs.Response.Mean - p.Response.Mean) / fcfs.Response.Mean,
		DK:  (fcfs.Cycle.Mean - p.Cycle.Mean) / fcfs.Cycle.Mean,
		DR:  (p.Throughput.Mean - fcfs.Throughput.Mean) / fcfs.Throughput.Mean,
	}
}

// ReplicationSeed derives replication r's seed from a base seed
// (SplitMix64 of base + r + 1): distinct replications get unrelated
// sequences, and a point's replication r has the same seed under every
// policy and N (common random numbers).
func ReplicationSeed(base uint64, r int) uint64 {
	z := base + uint64(r+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
