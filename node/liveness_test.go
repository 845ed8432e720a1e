package node

import "testing"

func TestLivenessEvery(t *testing.T) {
	for _, c := range []struct{ members, want int }{{1, 1}, {128, 1}, {129, 2}, {256, 2}, {1024, 8}, {4096, 32}} {
		if got := livenessEvery(c.members); got != c.want {
			t.Errorf("livenessEvery(%d) = %d, want %d", c.members, got, c.want)
		}
	}
}
