// Package hosts schedules jobs on a machine of several shared-memory hosts
// of different sizes, after the NCSA Origin 2000 study (Chiang): a job runs
// on one host and needs both its processors and its memory there.
//
// It is a scheduler core like gang.Scheduler, and as pure: no clock, no
// I/O, no goroutines, no randomness. Callers feed it events with an explicit
// now and carry out the Start decisions it returns:
//
//	s, err := hosts.New(cfg)
//	err = s.Submit(job, now)    // a job arrives
//	err = s.Finished(id, now)   // a job ended (or a queued one left)
//	ds, err := s.Schedule(now)  // []Start: job and host
//	t, ok := s.NextWakeup()     // a reservation comes due
//
// The calling order at an instant is gang's: every ended job, then every
// arrival, then one Schedule.
//
// # Rules
//
//   - Fit: a job of p processors whose processes need m bytes each needs
//     p·m bytes (JobMemory); it fits host h now if p ≤ free processors and
//     p·m ≤ free memory of h. A job no host could hold even empty is
//     refused by Submit (gang.ErrJobTooWide).
//   - Order: gang's priority-backfill policies (fcfs-bf, sjf-bf,
//     priority-bf, lxfw-bf) with gang.Priority and the same weights (the
//     memory term is 0: there is no single machine memory).
//   - A pass builds one availability profile per host, of processors and
//     memory, from the running jobs until their estimated ends, plus (fixed
//     mode) the reservations held. Jobs are walked in priority order. A job
//     starts now on the best-fit host (the fewest free processors, then the
//     lowest index) among those where it fits now and where the profile
//     keeps its processors and memory free for its whole estimate.
//     Otherwise, while fewer than N jobs hold one, it gets a reservation:
//     the earliest time some host's profile keeps its processors and memory
//     free for its estimate (ties: the fewest free processors now, then
//     the lowest index), entered in that profile.
//   - Reservations N, dynamic or fixed, exactly as in gang (see
//     docs/POLICIES.md): dynamic recomputes the top N every pass; fixed
//     keeps a reservation once given, and a due fixed reservation starts
//     on its host as soon as the job fits there.
//   - A pass decides only after an arrival, an end, a Place, a moved
//     estimate or a reservation come due (NextWakeup).
//
// Place and SetEstimatedEnd serve the simulator's immediate service
// (limited preemption), which lives in package jss: Place starts a job
// outside the queue on given free resources, SetEstimatedEnd stretches a
// preempted job's estimated end.
package hosts
