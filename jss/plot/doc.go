// Package plot draws the figures of a parameter sweep (package sweep) with
// gonum.org/v1/plot, as PNG or SVG: response time against the time slice,
// and response time, wait time, execution-time slowdown and processor
// utilization against the offered load, comparing space sharing with
// backfilling (space, the baseline), backfilling gang scheduling (gang) and
// buffered coscheduling (bcs).
//
// Figures lays the charts out from a sweep's rows (averaging over seeds)
// and reports the ones it cannot draw; Figure.Render and WriteFiles write
// them. The same rows always give the same bytes.
package plot
