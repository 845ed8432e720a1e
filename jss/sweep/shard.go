package sweep

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard selects part of a sweep for one job of a job array: shard K of N
// holds the points whose index % N == K−1. The zero Shard is the whole sweep.
type Shard struct {
	K, N int
}

// ParseShard reads "k/n" with 1 ≤ k ≤ n; "" is the whole sweep.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	ks, ns, ok := strings.Cut(s, "/")
	k, kerr := strconv.Atoi(strings.TrimSpace(ks))
	n, nerr := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || kerr != nil || nerr != nil {
		return Shard{}, fmt.Errorf("sweep: shard %q: want k/n, e.g. 2/4", s)
	}
	sh := Shard{K: k, N: n}
	if err := sh.validate(); err != nil {
		return Shard{}, err
	}
	return sh, nil
}

func (s Shard) validate() error {
	if s == (Shard{}) {
		return nil
	}
	if s.N < 1 || s.K < 1 || s.K > s.N {
		return fmt.Errorf("sweep: shard %d/%d: want 1 ≤ k ≤ n", s.K, s.N)
	}
	return nil
}

// Whole reports whether s is the whole sweep (the zero Shard).
func (s Shard) Whole() bool { return s == Shard{} }

// String returns "k/n", or "" for the whole sweep.
func (s Shard) String() string {
	if s.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Indices returns the indices of the points of a sweep of total points that
// the shard holds, in increasing order.
func (s Shard) Indices(total int) []int {
	if s.Whole() {
		s = Shard{K: 1, N: 1}
	}
	var idx []int
	for i := s.K - 1; i < total; i += s.N {
		idx = append(idx, i)
	}
	return idx
}

// FileBase is the base name of the shard's results files: "results" for
// the whole sweep, "shard-k-of-n" for a shard.
func (s Shard) FileBase() string {
	if s.Whole() {
		return "results"
	}
	return fmt.Sprintf("shard-%d-of-%d", s.K, s.N)
}

// Share says what part of a sweep of total points s runs: "18 points" for
// the whole sweep, "shard 2/3: 6 of 18 points" for a shard.
func (s Shard) Share(total int) string {
	if s.Whole() {
		return fmt.Sprintf("%d points", total)
	}
	return fmt.Sprintf("shard %v: %d of %d points", s, len(s.Indices(total)), total)
}
