package jss_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/sharing"
)

func randomTemplated(rng *rand.Rand, procs int, mem int64) []jss.Job {
	patterns := []string{"barrier", "news", "transpose"}
	syncs := []string{"B", "NB"}
	n := 5 + rng.IntN(25)
	jobs := make([]jss.Job, n)
	t := time.Duration(0)
	for i := range jobs {
		t += time.Duration(rng.IntN(40)) * time.Millisecond
		g := 1 + rng.IntN(20)
		v := rng.IntN(2*g + 1)
		tpl := fmt.Sprintf("%dms,%dms,%s,%s", g, v, patterns[rng.IntN(3)], syncs[rng.IntN(2)])
		run := time.Duration(5+rng.IntN(200)) * time.Millisecond
		j := job(int64(i+1), t, 1+rng.IntN(procs), run, tpl)
		if mem > 0 && rng.IntN(2) == 0 {
			j.Memory = 1 + rng.Int64N(mem)
		}
		jobs[i] = j
	}
	return jobs
}

func TestModelProperties(t *testing.T) {
	for seed := uint64(0); seed < 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		procs := 1 + rng.IntN(12)
		var mem int64
		if rng.IntN(2) == 0 {
			mem = 1000
		}
		jobs := randomTemplated(rng, procs, mem)
		for _, mode := range jss.Modes() {
			cfg := jss.DefaultModelConfig(mode)
			cfg.Scheduler.Machine = gang.Machine{Processors: procs, MemoryPerProcessor: mem}
			cfg.Scheduler.MPL = 1 + rng.IntN(4)
			cfg.Scheduler.Policy = gang.Policies()[rng.IntN(len(gang.Policies()))]
			cfg.Slice = time.Duration(2+rng.IntN(19)) * time.Millisecond // must exceed the 1 ms job switch
			cfg.Seed = seed
			cfg.Check = true
			if rng.IntN(3) == 0 {
				cfg.Network.Bandwidth = 2e6 // a few messages per slice
			}
			run := func() ([]jss.Result, jss.ModelStats) {
				var out []jss.Result
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				st, err := jss.RunModel(ctx, cfg, jss.SliceSource(jobs), func(r jss.Result) error {
					out = append(out, r)
					return nil
				})
				if err != nil {
					t.Fatalf("seed %d %s: %v", seed, mode, err)
				}
				return out, st
			}
			res, st := run()
			if len(res) != len(jobs) {
				t.Fatalf("seed %d %s: %d of %d jobs finished", seed, mode, len(res), len(jobs))
			}
			for _, r := range res {
				exec := r.End - r.Start
				switch {
				case r.Start < r.Submit || exec <= 0:
					t.Fatalf("seed %d %s: job %d ran [%v, %v] after submit %v", seed, mode, r.Number, r.Start, r.End, r.Submit)
				case mode == sharing.Space && exec != r.Runtime:
					t.Fatalf("seed %d space: job %d executed %v, dedicated %v", seed, r.Number, exec, r.Runtime)
				case mode == sharing.Gang && exec < r.Runtime:
					t.Fatalf("seed %d gang: job %d executed %v, faster than dedicated %v", seed, r.Number, exec, r.Runtime)
				}
			}
			if mode == sharing.BCS && st.Executed != st.Compute {
				t.Fatalf("seed %d bcs: executed %v of %v compute", seed, st.Executed, st.Compute)
			}
			if again, st2 := run(); !reflect.DeepEqual(again, res) || st2 != st {
				t.Fatalf("seed %d %s: second run differs", seed, mode)
			}
		}
	}
}
