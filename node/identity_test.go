package node_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"os"
	"os/user"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/sharing"
)

func newKey(t *testing.T) *clusterkey.Key {
	t.Helper()
	k, err := clusterkey.New(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// tokenClient is a client whose requests carry the token tok.
func tokenClient(addr, tok string) *api.Client {
	c := api.NewClient(addr)
	c.Token = func() (string, error) { return tok, nil }
	return c
}

func wantStatus(t *testing.T, what string, err error, status int, msg string) {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) || e.Status != status || !strings.Contains(e.Message, msg) {
		t.Errorf("%s: %v, want HTTP %d saying %q", what, err, status, msg)
	}
}

// Requests over TCP need a token signed with the cluster key; the Unix
// socket needs none; the agent, not the client, names a job's owner.
func TestAPIAuthentication(t *testing.T) {
	key := newKey(t)
	c := startCluster(t, clusterOpts{agents: 2, mode: sharing.Space, key: key})
	ctx := context.Background()
	ctl := c.agents[0].APIAddr()

	_, err := api.NewClient(ctl).Jobs(ctx, true)
	wantStatus(t, "no credential", err, http.StatusUnauthorized, "no credential")
	expired, _ := key.Mint(0, 0, time.Now().Add(-time.Hour), clusterkey.DefaultTTL, rand.Reader)
	_, err = tokenClient(ctl, expired).Jobs(ctx, true)
	wantStatus(t, "expired token", err, http.StatusUnauthorized, "expired")
	good, _ := key.Mint(0, 0, time.Now(), clusterkey.DefaultTTL, rand.Reader)
	// One character of the signature changed to another of the base64url
	// alphabet (flipping a bit could leave the alphabet: malformed, not
	// forged).
	tampered := []byte(good)
	if i := len(tampered) - 3; tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	_, err = tokenClient(ctl, string(tampered)).Jobs(ctx, true)
	wantStatus(t, "tampered token", err, http.StatusUnauthorized, "not signed")
	other, _ := newKey(t).Mint(0, 0, time.Now(), clusterkey.DefaultTTL, rand.Reader)
	_, err = tokenClient(c.agents[1].APIAddr(), other).Jobs(ctx, true)
	wantStatus(t, "other cluster's key, via a forwarding agent", err, http.StatusUnauthorized, "not signed")
	if _, err := tokenClient(ctl, good).Jobs(ctx, true); err != nil {
		t.Errorf("valid token refused: %v", err)
	}
	// Prometheus scrapes without a credential; the refusals are counted.
	resp, err := http.Get("http://" + ctl + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `cosched_api_unauthenticated_total{node="n0"} 3`) {
		t.Errorf("/metrics: HTTP %d, want the 3 refusals counted:\n%.2000s", resp.StatusCode, body)
	}

	// Through the Unix socket of an agent that forwards to the
	// controller: the kernel names the caller; a forged owner is ignored.
	sock := api.NewUnixClient(c.agents[1].APISocket())
	id, err := sock.Submit(ctx, api.JobSpec{Command: []string{"sleep", "100"}, Processors: 1,
		TimeLimit: api.Duration{D: time.Minute}, Owner: &api.Owner{UID: 4242, User: "mallory"}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := sock.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if o := j.Spec.Owner; o == nil || o.UID != uint32(os.Geteuid()) || o.User == "mallory" {
		t.Errorf("owner %+v, want uid %d as the kernel said", o, os.Geteuid())
	}
	// The group's name as the controller's node resolves it, for clients
	// that cannot (the light binary reads only /etc/group).
	if g, err := user.LookupGroupId(strconv.Itoa(os.Getegid())); err != nil {
		t.Errorf("looking up this test's group: %v", err)
	} else if o := j.Spec.Owner; o == nil || o.Group != g.Name {
		t.Errorf("owner %+v, want group %q", o, g.Name)
	}

	// Another user may list the queue but not see the job's details or
	// cancel it; the job keeps running.
	mallory, _ := key.Mint(4242, 4242, time.Now(), clusterkey.DefaultTTL, rand.Reader)
	mc := tokenClient(c.agents[1].APIAddr(), mallory)
	_, err = mc.Job(ctx, id)
	wantStatus(t, "another user's job details", err, http.StatusForbidden, "only its owner or an operator")
	err = mc.Cancel(ctx, id)
	wantStatus(t, "another user's cancel", err, http.StatusForbidden, "only its owner or an operator")
	jobs, err := mc.Jobs(ctx, false)
	if err != nil || len(jobs) != 1 || jobs[0].ID != id || jobs[0].Spec.Command != nil {
		t.Errorf("another user's queue: %+v %v, want job %d without its command", jobs, err, id)
	}
	c.waitState(id, api.Running, 10*time.Second)
	if err := sock.Cancel(ctx, id); err != nil {
		t.Errorf("the owner's cancel: %v", err)
	}
	c.waitState(id, api.Cancelled, 10*time.Second)
}

// An operator (a member of the admin group) may cancel anyone's job.
func TestAdminGroupCancels(t *testing.T) {
	key := newKey(t)
	admins := uint32(4300)
	c := startCluster(t, clusterOpts{agents: 1, mode: sharing.Space, key: key, adminGID: &admins})
	ctx := context.Background()
	id := c.submit(api.JobSpec{Command: []string{"sleep", "100"}, Processors: 1})
	op, _ := key.Mint(4301, admins, time.Now(), clusterkey.DefaultTTL, rand.Reader)
	if err := tokenClient(c.agents[0].APIAddr(), op).Cancel(ctx, id); err != nil {
		t.Fatalf("operator's cancel: %v", err)
	}
	c.waitState(id, api.Cancelled, 10*time.Second)
}
