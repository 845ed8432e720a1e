package jss

import "time"

// MaxDuration bounds durations that are simulated times or spans (a
// century, written 876000h in messages): beyond it, sums of them overflow
// time.Duration.
const MaxDuration = 100 * 365 * 24 * time.Hour
