package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// cycles is the number of collections the runtime has completed.
func cycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sink keeps the compiler from eliding garbage.
var sink []byte //nolint:unused // written, never read: that is the point

// garbage allocates n bytes in 4 KiB pieces, each dropped at once, and
// returns how many collections completed meanwhile.
func garbage(n int) uint64 {
	before := cycles()
	for i := 0; i < n; i += 4 << 10 {
		sink = make([]byte, 4<<10)
	}
	sink = nil
	return cycles() - before
}

func TestFloorDefersCollectionsOfASmallHeap(t *testing.T) {
	runtime.GC()
	baseline := garbage(64 << 20)
	if baseline < 4 {
		t.Fatalf("64 MiB of garbage at GOGC=%d made %d collections; want several (the test's premise)", debug.SetGCPercent(-1), baseline)
	}
	f := Start(256 << 20)
	defer f.Stop()
	if p := f.Percent(); p <= 100 {
		t.Fatalf("GOGC under a 256 MiB floor with a small heap is %d; want far above 100", p)
	}
	floored := garbage(64 << 20)
	// And after a collection the floor still holds: the cleanup re-armed.
	runtime.GC()
	runtime.GC()
	again := garbage(64 << 20)
	t.Logf("collections for 64 MiB of garbage: %d at GOGC 100, %d and %d under a 256 MiB floor", baseline, floored, again)
	if floored > 1 || again > 1 {
		t.Fatalf("under a 256 MiB floor 64 MiB of garbage made %d, then %d collections; want at most 1 (at GOGC 100: %d)", floored, again, baseline)
	}
}

func TestFloorFollowsALargeLiveHeap(t *testing.T) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	f := Start(16 << 20)
	defer f.Stop()
	live := make([][]byte, 0, 40<<10)
	for range 40 << 10 { // 40 MiB live: above the floor
		live = append(live, make([]byte, 1<<10))
	}
	deadline := time.Now().Add(10 * time.Second) // a hang detector: cleanups run soon after a collection
	for f.Percent() != base {
		if time.Now().After(deadline) {
			t.Fatalf("with 40 MiB live over a 16 MiB floor GOGC stayed %d; want the proportional %d", f.Percent(), base)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(live)
}

func TestStopRestoresGOGC(t *testing.T) {
	old := debug.SetGCPercent(150)
	defer debug.SetGCPercent(old)
	f := Start(256 << 20)
	if f.Percent() == 150 {
		t.Fatal("the floor did not raise GOGC")
	}
	f.Stop()
	f.Stop() // idempotent
	if got := debug.SetGCPercent(150); got != 150 {
		t.Fatalf("GOGC after Stop is %d; want 150 again", got)
	}
	runtime.GC() // a cleanup armed before Stop must not raise it again
	time.Sleep(50 * time.Millisecond)
	if got := debug.SetGCPercent(150); got != 150 {
		t.Fatalf("GOGC after a collection following Stop is %d; want 150", got)
	}
}

func TestOffOrZeroFloorChangesNothing(t *testing.T) {
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	f := Start(256 << 20)
	defer f.Stop()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("GOGC=off became %d", got)
	}
	debug.SetGCPercent(100)
	g := Start(0)
	defer g.Stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("a zero floor changed GOGC to %d", got)
	}
}

func TestPercentFor(t *testing.T) {
	for _, c := range []struct {
		live, floor uint64
		base, want  int
	}{
		{live: 2 << 20, floor: 64 << 20, base: 100, want: 3100},
		{live: 64 << 20, floor: 64 << 20, base: 100, want: 100},
		{live: 1 << 30, floor: 64 << 20, base: 100, want: 100},
		{live: 60 << 20, floor: 64 << 20, base: 100, want: 100}, // the proportional goal is higher
		{live: 0, floor: 64 << 20, base: 100, want: maxPercent},
		{live: 2 << 20, floor: 64 << 20, base: 5000, want: 5000},
	} {
		if got := percentFor(c.live, c.floor, c.base); got != c.want {
			t.Errorf("percentFor(live %d, floor %d, base %d) = %d; want %d", c.live, c.floor, c.base, got, c.want)
		}
	}
}
