package strobe

import "go.uber.org/zap"

// The strobe fan-out tree (Sender.SetFanout). A strobe that carries a
// Forward list makes its receiver the root of a k-ary heap over itself
// and that list: the list is the receiver's subtree without itself, in
// breadth-first order, so local index 0 is the receiver, list[i] is local
// index i+1, and local node a's children are k·a+1 … k·a+k. The receiver
// forwards the strobe to each of its children, each with that child's own
// subtree (again in breadth-first order: a subtree of a heap-shaped tree
// is heap-shaped). The controller is the root of the whole tree: its list
// is the target list, rotated by the slice number.
//
// Why this shape: the tree is decided by the controller alone and travels
// with the strobe, so agents need no copy of the member list, cannot
// disagree about it, and a membership change takes effect at the very
// next strobe. The cost is bytes: a subtree of m agents costs about
// m × (address + 1) bytes in the packet to its root, so the controller's
// packets carry (N−1)/k addresses each (see docs/scaling.md for where
// that stops). A hop whose packet would exceed MaxPacketSize is not
// forwarded: the sender strobes that subtree directly.
//
// Loss: a lost or dead inner node costs its subtree that slice, which the
// Follower's sequence rules already absorb (the next strobe is applied at
// once, the gap counted Lost). The order rotates every slice by one more
// than the number of inner nodes (treeOrder), so an agent that is an
// inner node in one slice is a leaf in the next: a dead agent (until
// membership drops it) is an inner node in about one slice in k, and its
// descendants lose isolated slices, never two running.

// fanoutHop is one child of a fan-out root: where to send, and the
// subtree that child forwards to in turn.
type fanoutHop struct {
	to      string
	forward []string // the child's subtree without the child, breadth-first
}

// fanoutChildren returns the root's children in a k-ary heap whose
// non-root nodes are list, breadth-first. k < 1 is treated as 1.
func fanoutChildren(list []string, k int) []fanoutHop {
	k = max(k, 1)
	m := len(list) + 1 // nodes, counting the root at local index 0
	hops := make([]fanoutHop, 0, min(k, len(list)))
	for c := 1; c <= k && c < m; c++ {
		h := fanoutHop{to: list[c-1]}
		for lo, hi := c*k+1, c*k+k; lo < m; lo, hi = lo*k+1, hi*k+k {
			h.forward = append(h.forward, list[lo-1:min(hi, m-1)]...)
		}
		hops = append(hops, h)
	}
	return hops
}

// treeOrder is the target list the controller's tree is built from for
// slice seq: targets rotated by seq × stride, where stride is the first
// number past the count of inner agents (those with children: the first
// inner of the list) that is coprime with n. An agent inner in one slice
// is thus moved past the inner region, to a leaf, in the next (given
// stride ≤ n − inner), and the rotation goes through all n places before
// it repeats, so no agent's ancestors are the same few slice after slice.
func treeOrder(targets []string, k int, seq uint64) []string {
	n := len(targets)
	inner := (n - 1) / max(k, 1) // local a ≥ 1 has children iff k·a+1 ≤ n
	stride := inner + 1
	for s := stride; s <= n-inner; s++ {
		if gcd(s, n) == 1 {
			stride = s
			break
		}
	}
	return rotate(targets, int(seq%uint64(n)*uint64(stride)%uint64(n)))
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// rotate returns targets starting at index first mod len(targets), as a
// new slice.
func rotate(targets []string, first int) []string {
	n := len(targets)
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, targets[(first+i)%n])
	}
	return out
}

// forwardStrobe sends st to the children of a fan-out root whose subtree
// is list: plain (st encoded without a forward list) to a leaf, st with
// its subtree, encoded by auth, to an inner child. A subtree whose packet
// would exceed MaxPacketSize is strobed directly, plain to each of its
// agents.
func forwardStrobe(st Strobe, k int, list []string, plain []byte, send func(to string, data []byte), auth *Auth, log *zap.Logger) {
	for _, h := range fanoutChildren(list, k) {
		if len(h.forward) == 0 {
			send(h.to, plain)
			continue
		}
		st.Fanout, st.Forward = uint8(k), h.forward
		data, err := auth.encode(&st)
		if err != nil {
			log.Debug("strobe: subtree too large to forward, strobing it directly",
				zap.String("root", h.to), zap.Int("agents", len(h.forward)+1), zap.Error(err))
			send(h.to, plain)
			for _, to := range h.forward {
				send(to, plain)
			}
			continue
		}
		send(h.to, data)
	}
}
