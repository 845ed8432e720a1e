// Package comm is cosched's MPI-like message library for ranks. Its
// traffic goes through the rank's agent (the relay, package comm/relay),
// which forwards it at once (space, gang and local modes) or buffers it per
// time slice and delivers it after the strobe (bcs mode): the program is
// the same either way.
//
//	c, err := comm.Init(ctx)                 // from COSCHED_JOB, COSCHED_RANK, COSCHED_SIZE, COSCHED_RELAY (and COSCHED_RELAY_GRACE)
//	defer c.Finalize(ctx)
//	err = c.Send(ctx, dst, tag, data)        // completes once handed to the relay (buffered send)
//	m, err := c.Recv(ctx, comm.AnySource, comm.AnyTag)   // m.Source, m.Tag, m.Data
//	r1, _ := c.Isend(dst, tag, data)         // non-blocking; a send request is complete at once
//	r2, _ := c.Irecv(src, tag)
//	ms, err := c.Waitall(ctx, []*comm.Request{r1, r2})   // ms[i] is the message of a receive request
//	m, err = c.Wait(ctx, r2)
//	err = c.Barrier(ctx)
//	out, err := c.Alltoall(ctx, in)          // in[j] goes to rank j; out[j] came from rank j
//	sum, err := c.Allreduce(ctx, x)          // float64 sum over all ranks, identical on every rank
//	err = c.ReportStats(comm.Stats{…})       // benchmark ranks: reported with the rank's exit
//
// # Semantics
//
//   - Ranks are 0 … Size−1 of one job; tags are ≥ 0 (AnySource and AnyTag
//     match anything in receives). A rank may send to itself. Payloads are
//     at most MaxMessage bytes.
//   - Every message is delivered exactly once, and messages from one source
//     with one tag are received in the order they were sent (non-overtaking,
//     as in MPI), also when the rank is stopped (SIGSTOP) in the middle of a
//     send or receive: the connection is a stream that simply resumes.
//     Receives are matched in the relay: a message goes to the oldest
//     posted receive it matches.
//   - Sends are buffered: Send returns, and an Isend request completes, as
//     soon as the message is written to the relay's connection. Data may be
//     reused at once. Send checks its ctx only before sending (a message is
//     never half sent).
//   - Blocking calls return ctx's error when ctx is done; the pending
//     receive stays posted (a later Wait on its request can still complete,
//     and a receive abandoned by Recv takes the next message it matches).
//     Completed requests can be waited on again and give the same message.
//   - Barrier, Alltoall and Allreduce must be called by every rank in the
//     same order. Collectives use their own message context, so they never
//     match a user receive, even one with AnyTag, and their tag is the
//     call's sequence number, so successive collectives never mix (one
//     abandoned through ctx included). Allreduce adds the values in rank
//     order on every rank, so every rank gets the same bits. With one rank
//     Alltoall and Allreduce involve no traffic; Barrier always goes
//     through the relay.
//   - A rank is in at most one barrier at a time: a Barrier abandoned
//     through ctx leaves the rank arrived, and the next Barrier call (or a
//     concurrent one from another goroutine) first waits for that
//     barrier's release.
//   - Finalize must be called once, last: it waits for the relay's answer
//     (or ctx), and calls blocked in other goroutines return ErrFinalized.
//     A rank whose connection closes without Finalize (it exited or
//     crashed) fails its job. After Finalize every call returns
//     ErrFinalized, also when the connection had failed before (Finalize
//     itself then returns that failure).
//   - A Comm is safe for concurrent use by several goroutines.
//   - Errors: a relay that goes away, or reports the job over (Fatal),
//     fails every pending and later call with an error saying so (with
//     Fatal's text). So does relay input the library did not ask for or
//     cannot decode (a Deliver for a receive that is not posted or does not
//     match it, a Release of a barrier the rank is not in, a malformed or
//     oversized frame): the connection is then out of sync and is closed.
//
// The wire protocol with the relay is in proto.go.
package comm
