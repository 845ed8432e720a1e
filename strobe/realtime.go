package strobe

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setThreadFIFO gives the calling OS thread (which must be locked with
// runtime.LockOSThread) the SCHED_FIFO policy at prio (1–99), and returns a
// function that restores its previous policy. Real-time scheduling is what
// lets a strobe preempt busy ranks at once: under the fair scheduler a
// woken thread, whatever its nice value, can wait out a running task's
// slice (milliseconds), which is the whole skew budget. It needs root or
// CAP_SYS_NICE; the error says so.
func setThreadFIFO(prio int) (restore func(), err error) {
	if prio < 1 || prio > 99 {
		return func() {}, fmt.Errorf("strobe: real-time priority %d: want 1 to 99", prio)
	}
	old, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return func() {}, fmt.Errorf("strobe: sched_getattr: %w", err)
	}
	attr := unix.SchedAttr{Size: uint32(unsafe.Sizeof(unix.SchedAttr{})), Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return func() {}, fmt.Errorf("strobe: SCHED_FIFO priority %d (needs root or CAP_SYS_NICE): %w", prio, err)
	}
	return func() { _ = unix.SchedSetAttr(0, old, 0) }, nil
}
