package member

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/leakcheck"
)

// leaks watches this package's goroutines and memberlist's.
func leaks() leakcheck.Checker {
	return leakcheck.New("member", "github.com/cosched/cosched/member", "github.com/hashicorp/memberlist")
}

// TestMain fails the package if any goroutine of this package or of
// memberlist outlives the tests. With MEMBER_HELPER_JOIN set, the test
// binary is instead a member joining that address, which prints its
// gossip address and runs until killed (a member to kill -9).
func TestMain(m *testing.M) {
	if join := os.Getenv("MEMBER_HELPER_JOIN"); join != "" {
		cfg := DefaultLocalConfig()
		if os.Getenv("MEMBER_HELPER_STOCK") != "" {
			cfg = stockLocalConfig()
		}
		cfg.Name, cfg.Join = os.Getenv("MEMBER_HELPER_NAME"), []string{join}
		ms, err := Join(context.Background(), cfg)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(ms.Addr())
		select {}
	}
	leaks().Main(m)
}

// checkLeaks fails t if goroutines of this package (or memberlist) are
// still running a few seconds after the test and its cleanups finish.
// Register it first, so it runs after every other cleanup.
func checkLeaks(t *testing.T) {
	t.Helper()
	leaks().Check(t)
}

// eventually polls cond until it holds or a generous timeout passes. The
// timeout is a hang detector, not a speed assertion.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
