package sweep

import (
	"slices"
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"": {}, "1/1": {1, 1}, "2/4": {2, 4}, " 4 / 4 ": {4, 4}} {
		got, err := ParseShard(in)
		if err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0/4", "5/4", "1/0", "2", "a/b", "-1/2", "1/2/3"} {
		if _, err := ParseShard(in); err == nil || !strings.HasPrefix(err.Error(), "sweep: shard") {
			t.Errorf("%q: error %v", in, err)
		}
	}
}

func TestShardIndicesPartitionTheSweep(t *testing.T) {
	if got := (Shard{2, 4}).Indices(10); !slices.Equal(got, []int{1, 5, 9}) {
		t.Errorf("2/4 of 10: %v", got)
	}
	if got := (Shard{}).Indices(3); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("whole of 3: %v", got)
	}
	if got := (Shard{5, 5}).Indices(3); len(got) != 0 {
		t.Errorf("5/5 of 3: %v", got)
	}
	count := make([]int, 17)
	for k := 1; k <= 5; k++ {
		for _, i := range (Shard{k, 5}).Indices(17) {
			count[i]++
		}
	}
	for i, c := range count {
		if c != 1 {
			t.Errorf("index %d in %d shards", i, c)
		}
	}
	if (Shard{}).FileBase() != "results" || (Shard{2, 4}).FileBase() != "shard-2-of-4" || (Shard{2, 4}).String() != "2/4" || (Shard{}).String() != "" {
		t.Error("names")
	}
}

func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{[]int{3, 4, 5, 9}, "3-5, 9"},
		{[]int{0}, "0"},
		{[]int{1, 2, 4, 5, 7}, "1-2, 4-5, 7"},
		{[]int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26}, "0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, … (14 in all)"},
	} {
		if got := ranges(tc.in); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestShardShare(t *testing.T) {
	if got := (Shard{}).Share(18); got != "18 points" {
		t.Errorf("whole: %q", got)
	}
	if got := (Shard{2, 4}).Share(10); got != "shard 2/4: 3 of 10 points" {
		t.Errorf("2/4 of 10: %q", got)
	}
}
