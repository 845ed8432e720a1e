package nowsim

import (
	"context"
	"fmt"

	"github.com/cosched/cosched/gang/now"
)

// Study is every policy run on every seed's workload (cosched sim now):
// the trace's jobs, the same for every seed, or else a workload Gen
// generates with the seed.
type Study struct {
	Speeds   []float64
	Policies []now.Policy
	Estimate now.EstimateSpec
	Seeds    []uint64
	Gen      GenConfig // its Seed is each of Seeds in turn
	Trace    []Job     // nil: generated
}

// Run returns one result per seed and policy, seed by seed, each policy's
// estimator prior the workload's mean work (MeanWork).
func (s Study) Run(ctx context.Context) ([]Result, error) {
	var results []Result
	for _, seed := range s.Seeds {
		jobs := s.Trace
		if jobs == nil {
			g := s.Gen
			g.Seed = seed
			var err error
			if jobs, err = Generate(ctx, g); err != nil {
				return nil, err
			}
		}
		for _, pol := range s.Policies {
			cfg := Config{Speeds: s.Speeds, Policy: pol, Estimate: s.Estimate, Prior: MeanWork(jobs), Seed: seed}
			res, err := Run(ctx, cfg, jobs, nil)
			if err != nil {
				return nil, fmt.Errorf("policy %s, seed %d: %w", pol, seed, err)
			}
			results = append(results, res)
		}
	}
	return results, nil
}
