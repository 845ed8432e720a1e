// Package agentctl is the agent's side of the control protocol as a state
// machine, with no clock, goroutine, lock or I/O: which controller
// connection (link) is current, which launches were taken, which ranks are
// listed in a welcome, and where every rank exit is on its way to a
// controller. It is the counterpart of node/ctl and built the same way
// (etcd raft's RawNode): the caller delivers inputs, then collects one
// batch of effects (Ready) and carries them out in the documented order.
//
// # Inputs
//
//   - Connect(live, jobs): a controller's hello was read on a new
//     connection. The machine gives it a link number, closes the previous
//     link, and answers with a welcome: the jobs and the live ranks the
//     caller lists, every rank of a taken launch whose exit is not reported
//     yet (pid 0 while starting), the exits already delivered (the previous
//     controller may have died before journaling them) and those no
//     controller has heard of, the agent's incarnation and the jobs this
//     life got a launch for. The rest of the pending exits follow on the
//     link as rank exits.
//   - Launch(link, job, ranks): a launch was read on link. A launch read on
//     a link a newer welcome replaced is Stale (that welcome did not list
//     it: the controller that wants it sends it again); one of a job this
//     life has already (launched, or ranks adopted) is a Duplicate; both
//     are dropped. A Taken launch's job joins the launched list and its
//     ranks are unreported until their exit. Current(link) says whether a
//     row change read on link is applied (stale ones are not: the new
//     controller restates every row). Kills are applied whatever link
//     they come on (repeating one is harmless): they are not inputs.
//   - Started(job, rank, pid): a rank's process runs.
//   - Adopt(ranks): a restarted agent took back ranks a previous life kept
//     (ended ones too): they are unreported until their exit.
//   - Exit(x): a rank ended (or could not start). It is queued on the
//     current link, or kept pending without one. Queued counts as
//     delivered: every later welcome repeats it.
//   - Written(link, exits): the link's writer wrote a frame carrying exits:
//     a kept rank's records may go (Ready.Forget).
//   - Broken(link): the link's writer stopped (write failed, or the link
//     was closed). Its exits not yet written are queued again on the
//     current link, or pending for the next controller.
//   - Disconnect(link): the link's reader ended. ControllerGone: gossip
//     says the controller left (a partition sends no FIN).
//
// # Effects and their order
//
// Ready returns, and the caller must carry out, under the same lock as
// the input that produced them (so that no other input's effects come
// between), in this order:
//
//  1. Close: links to close (the previous controller's).
//  2. Welcome: the first frame of its (new) link; the caller opens the
//     link on the connection it has and starts the link's writer.
//  3. Writes: rank exits to queue on a link, in order, after the welcome.
//  4. Forget: written exits whose kept-rank records may be removed (I/O:
//     may be done after the lock is released).
//  5. LinkChanged: whether a controller is connected may have changed.
//
// # Bounds
//
// Pending exits (MaxPending), delivered exits repeated in welcomes
// (MaxDelivered), a welcome's exits (MaxWelcomeExits) and the launched
// list (MaxLaunched, with a floor below which ids were forgotten) are
// bounded, so that a welcome always fits a control frame.
package agentctl
