package strobe

import (
	"fmt"
	"slices"
	"testing"
)

// TestFanoutChildrenCoversTheTree walks the tree the way agents do and
// checks that every node is reached exactly once, within ⌈log_k N⌉+1 hops.
func TestFanoutChildrenCoversTheTree(t *testing.T) {
	for _, k := range []int{1, 2, 3, 8, 16} {
		for _, n := range []int{0, 1, 2, 7, 8, 9, 63, 64, 65, 1000} {
			var list []string
			for i := range n {
				list = append(list, fmt.Sprintf("a%d", i))
			}
			seen := map[string]int{} // node → depth
			var walk func(sub []string, depth int)
			walk = func(sub []string, depth int) {
				hops := fanoutChildren(sub, k)
				if len(hops) > k {
					t.Fatalf("k=%d n=%d: %d children", k, n, len(hops))
				}
				for _, h := range hops {
					if _, dup := seen[h.to]; dup {
						t.Fatalf("k=%d n=%d: %s reached twice", k, n, h.to)
					}
					seen[h.to] = depth
					walk(h.forward, depth+1)
				}
			}
			walk(list, 1)
			if len(seen) != n {
				t.Fatalf("k=%d n=%d: reached %d nodes", k, n, len(seen))
			}
			// A complete k-ary heap of n+1 nodes has depth ⌊log_k(n·(k−1)+1)⌋ (k>1).
			maxDepth := 0
			for _, d := range seen {
				maxDepth = max(maxDepth, d)
			}
			want := 0
			for size, level := 1, 1; size < n+1; size, level = size+level*k, level*k {
				want++
			}
			if k == 1 {
				want = n
			}
			if maxDepth != want {
				t.Fatalf("k=%d n=%d: depth %d, want %d", k, n, maxDepth, want)
			}
		}
	}
}

func TestRotate(t *testing.T) {
	got := rotate([]string{"a", "b", "c"}, 4)
	if !slices.Equal(got, []string{"b", "c", "a"}) {
		t.Fatalf("rotate: %v", got)
	}
}
