package agentctl

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// simLink is one link as a controller would see it: its frames in order
// (the welcome first), how many its writer wrote, and whether the writer
// stopped.
type simLink struct {
	frames  [][]Exit
	written int
	broken  bool
}

// Random runs of connects, launches, exits, writes, breaks and
// disconnects, checking the protocol's promises at every welcome and at
// the end:
//   - every rank of every launch taken is, at each welcome, either listed
//     among its ranks or has its exit in the welcome or queued right after
//     it on the same link (a controller never takes it for lost);
//   - no exit is ever queued on a link whose writer has stopped;
//   - a last controller whose link is written through hears of every exit
//     ever reported (fewer than MaxDelivered here: those are repeated).
func TestRandomRunsLoseNoExit(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomRun(t, seed) })
	}
}

func randomRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	m := New(Config{Incarnation: 1})
	links := map[uint64]*simLink{}
	type key struct {
		job  int64
		rank int
	}
	launched := map[key]bool{} // taken, exit not yet reported
	var reported []Exit
	nextJob, nextPID := int64(1), 1

	apply := func(rd Ready) {
		if w := rd.Welcome; w != nil {
			links[w.Link] = &simLink{frames: [][]Exit{slices.Clone(w.Exits)}}
			covered := map[key]bool{}
			for _, r := range w.Ranks {
				covered[key{r.Job, r.Rank}] = true
			}
			for _, x := range w.Exits {
				covered[key{x.Job, x.Rank}] = true
			}
			for _, wr := range rd.Writes {
				if wr.Link == w.Link {
					covered[key{wr.Exit.Job, wr.Exit.Rank}] = true
				}
			}
			for k := range launched {
				if !covered[k] {
					t.Fatalf("welcome %d neither lists job %d rank %d nor carries its exit", w.Link, k.job, k.rank)
				}
			}
		}
		for _, wr := range rd.Writes {
			l := links[wr.Link]
			if l == nil || l.broken {
				t.Fatalf("exit %+v queued on link %d, whose writer stopped", wr.Exit, wr.Link)
			}
			l.frames = append(l.frames, []Exit{wr.Exit})
		}
	}
	open := func() []uint64 {
		var ids []uint64
		for id, l := range links {
			if !l.broken {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	for range 200 {
		switch op := rng.IntN(10); {
		case op == 0:
			m.Connect(nil, nil)
		case op <= 2 && len(reported)+len(launched) < MaxDelivered-10:
			link := m.Welcomes()
			if rng.IntN(5) == 0 && link > 1 {
				link-- // read on a replaced link: dropped
			}
			job := nextJob
			nextJob++
			ranks := []int{0, 1, 2}[:1+rng.IntN(3)]
			if m.Launch(link, job, ranks) == Taken {
				for _, r := range ranks {
					launched[key{job, r}] = true
				}
			}
		case op <= 4 && len(launched) > 0:
			ks := make([]key, 0, len(launched))
			for k := range launched {
				ks = append(ks, k)
			}
			slices.SortFunc(ks, func(a, b key) int {
				if a.job != b.job {
					return int(a.job - b.job)
				}
				return a.rank - b.rank
			})
			k := ks[rng.IntN(len(ks))]
			delete(launched, k)
			x := Exit{Job: k.job, Rank: k.rank, PID: nextPID}
			nextPID++
			reported = append(reported, x)
			m.Exit(x)
		case op <= 7:
			if ids := open(); len(ids) > 0 {
				id := ids[rng.IntN(len(ids))]
				if l := links[id]; l.written < len(l.frames) {
					m.Written(id, l.frames[l.written])
					l.written++
				}
			}
		case op == 8:
			if ids := open(); len(ids) > 0 {
				id := ids[rng.IntN(len(ids))]
				links[id].broken = true
				m.Broken(id)
			}
		default:
			m.Disconnect(m.Welcomes())
		}
		apply(m.Ready())
	}
	// Every writer stops; a last controller connects and is written to.
	for _, id := range open() {
		links[id].broken = true
		m.Broken(id)
		apply(m.Ready())
	}
	last := m.Connect(nil, nil)
	apply(m.Ready())
	heard := map[Exit]bool{}
	for _, f := range links[last].frames {
		for _, x := range f {
			heard[Exit{Job: x.Job, Rank: x.Rank, PID: x.PID}] = true
		}
	}
	for _, x := range reported {
		if !heard[x] {
			t.Fatalf("exit of job %d rank %d (pid %d) never reaches the last controller", x.Job, x.Rank, x.PID)
		}
	}
}
