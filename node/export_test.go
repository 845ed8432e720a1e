package node

// ControlPeer is the address of the controller's end of the agent's
// control connection ("" without one): tests tell connections apart by it.
func ControlPeer(a *Agent) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn == nil {
		return ""
	}
	return a.conn.RemoteAddr().String()
}

// BreakControl closes the agent's control connection, as a network fault
// would: the agent and the controller both see it end, neither process
// stops. It reports whether there was one.
func BreakControl(a *Agent) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn == nil {
		return false
	}
	a.conn.Close()
	return true
}
