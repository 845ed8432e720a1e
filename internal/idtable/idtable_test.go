package idtable

import (
	"math"
	"math/rand/v2"
	"testing"
)

type id int64

// TestMatchesMap runs random workloads against a Go map: IDs given in
// increasing order and retired out of order (a simulator's), with some
// that stay very long (spilling the window to the map), others from
// anywhere (negative, huge, reused), and checks every lookup and the
// length after each step.
func TestMatchesMap(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var tab Table[id, int]
		ref := map[id]*int{}
		var live []id
		next := id(rng.IntN(5))
		check := func(k id) {
			t.Helper()
			if got, want := tab.Get(k), ref[k]; got != want {
				t.Fatalf("seed %d: Get(%d) = %v, want %v", seed, k, got, want)
			}
		}
		for step := range 8000 {
			switch op := rng.IntN(100); {
			case op < 45: // the next ID in order, sometimes after a gap
				if rng.IntN(50) == 0 {
					next += id(rng.IntN(3000))
				}
				v := new(int)
				*v = step
				tab.Put(next, v)
				ref[next] = v
				live = append(live, next)
				next++
			case op < 50: // an ID from anywhere
				k := []id{-1, -next, math.MaxInt64, math.MinInt64, id(rng.Int64()), next + maxRing, next / 2}[rng.IntN(7)]
				v := new(int)
				if _, ok := ref[k]; !ok {
					live = append(live, k)
				}
				tab.Put(k, v)
				ref[k] = v
			case op < 93 && len(live) > 0: // retire a live ID, mostly an old one
				i := rng.IntN(min(len(live), 40))
				if rng.IntN(20) == 0 {
					i = rng.IntN(len(live))
				}
				if rng.IntN(400) == 0 {
					continue // keep this one for a long time: it may pin the window
				}
				k := live[i]
				live = append(live[:i], live[i+1:]...)
				tab.Delete(k)
				delete(ref, k)
				check(k)
			case op < 97: // replace a live record
				if len(live) == 0 {
					continue
				}
				k := live[rng.IntN(len(live))]
				v := new(int)
				tab.Put(k, v)
				ref[k] = v
			default: // delete or look up an ID never given
				k := next + id(rng.IntN(10))
				tab.Delete(k)
				check(k)
			}
			if tab.Len() != len(ref) {
				t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, tab.Len(), len(ref))
			}
			if step%97 == 0 {
				for _, k := range live {
					check(k)
				}
				check(next - 1)
				check(-5)
			}
		}
	}
}

// TestRingStaysSmall: jobs given and retired in order use only a ring
// as wide as the jobs present, never the map.
func TestRingStaysSmall(t *testing.T) {
	var tab Table[id, int]
	v := new(int)
	for i := range id(100000) {
		tab.Put(i, v)
		if i >= 50 {
			tab.Delete(i - 50)
		}
	}
	if len(tab.ring) > 64 || tab.other != nil {
		t.Fatalf("ring of %d slots, map %v: want 64 slots and no map", len(tab.ring), tab.other)
	}
	if tab.Len() != 50 {
		t.Fatalf("Len %d, want 50", tab.Len())
	}
}

func BenchmarkTable(b *testing.B) {
	v := new(int)
	b.Run("idtable", func(b *testing.B) {
		var tab Table[id, int]
		for i := range id(b.N) {
			tab.Put(i, v)
			if i >= 100 && tab.Get(i-100) == nil {
				b.Fatal("lost")
			}
			if i >= 200 {
				tab.Delete(i - 200)
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		tab := map[id]*int{}
		for i := range id(b.N) {
			tab[i] = v
			if i >= 100 && tab[i-100] == nil {
				b.Fatal("lost")
			}
			if i >= 200 {
				delete(tab, i-200)
			}
		}
	})
}
