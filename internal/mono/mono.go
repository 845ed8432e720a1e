// Package mono reads CLOCK_MONOTONIC directly. Go's time.Now carries a
// monotonic reading that is only comparable within one process; the
// runtime compares switch times across agent processes on one host (slice
// skew), which needs the system-wide clock.
package mono

import "golang.org/x/sys/unix"

// Now returns CLOCK_MONOTONIC in nanoseconds: comparable across processes
// on the same host, meaningless across hosts.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("mono: clock_gettime(CLOCK_MONOTONIC): " + err.Error()) // cannot fail on Linux
	}
	return ts.Nano()
}
