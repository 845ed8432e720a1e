package clusterkey

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// linkPair runs a handshake over a loopback TCP connection: the server end
// with server, the client end with client (nil: the client writes plain
// bytes instead, as a peer without the key would).
func linkPair(t *testing.T, server, client *Link) (srv, cli *tls.Conn, srvErr, cliErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		c   *tls.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- result{nil, err}
			return
		}
		tc, err := server.Server(context.Background(), c, 5*time.Second)
		if err != nil {
			c.Close()
		}
		done <- result{tc, err}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if client == nil {
		raw.Write([]byte("\x00\x00\x00\x10hello, I am a relay"))
	} else {
		cli, cliErr = client.Client(context.Background(), raw, 5*time.Second)
		if cliErr == nil {
			// The server's check of the client's certificate ends in the
			// client's first read (TLS 1.3 sends the verdict after).
			cli.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			_, cliErr = cli.Read(make([]byte, 1))
			if ne, ok := cliErr.(net.Error); ok && ne.Timeout() {
				cliErr = nil
			}
			cli.SetReadDeadline(time.Time{})
		}
	}
	r := <-done
	if r.c != nil {
		t.Cleanup(func() { r.c.Close() })
	}
	return r.c, cli, r.err, cliErr
}

func mustLink(t *testing.T, k *Key, purpose string) *Link {
	t.Helper()
	l, err := k.Link(purpose)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLinkSameKey(t *testing.T) {
	k := testKey(1)
	srv, cli, srvErr, cliErr := linkPair(t, mustLink(t, k, "relay"), mustLink(t, k, "relay"))
	if srvErr != nil || cliErr != nil {
		t.Fatalf("handshake: server %v, client %v", srvErr, cliErr)
	}
	msg := []byte("a frame")
	go cli.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(srv, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("read %q %v, want %q", got, err, msg)
	}
}

func TestLinkRefusesOthers(t *testing.T) {
	k, other := testKey(1), testKey(2)
	for _, tc := range []struct {
		name           string
		server, client *Link
	}{
		{"client with another key", mustLink(t, k, "relay"), mustLink(t, other, "relay")},
		{"server with another key", mustLink(t, other, "relay"), mustLink(t, k, "relay")},
		{"other purpose", mustLink(t, k, "control"), mustLink(t, k, "relay")},
		{"plain client", mustLink(t, k, "relay"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, srvErr, cliErr := linkPair(t, tc.server, tc.client)
			if srvErr == nil {
				t.Errorf("server accepted the connection")
			}
			if tc.client != nil && cliErr == nil {
				t.Errorf("client kept the connection")
			}
			// Whichever end checks the other's certificate says why.
			if tc.client != nil && !errors.Is(srvErr, ErrNotCluster) && !errors.Is(cliErr, ErrNotCluster) {
				t.Errorf("neither end reports ErrNotCluster: server %v, client %v", srvErr, cliErr)
			}
		})
	}
}

func TestLinkDeterministic(t *testing.T) {
	k := testKey(1)
	a, b := mustLink(t, k, "relay"), mustLink(t, k, "relay")
	if !bytes.Equal(a.pub, b.pub) {
		t.Fatal("one key and purpose gave two certificates")
	}
	if c := mustLink(t, k, "control"); bytes.Equal(a.pub, c.pub) {
		t.Fatal("two purposes share a certificate")
	}
}

// BenchmarkLinkDial is the cost of opening a link: a TCP connection
// (plain) beside a TCP connection and the TLS handshake (keyed), in the
// same run. Links live as long as their peers, so this is paid once per
// controller–agent and relay–relay pair, not per frame.
func BenchmarkLinkDial(b *testing.B) {
	k := testKey(1)
	l, err := k.Link("relay")
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	keyed := make(chan bool, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if <-keyed {
				if tc, err := l.Server(context.Background(), c, 5*time.Second); err == nil {
					tc.Read(make([]byte, 1)) // until the client closes
				}
			} else {
				c.Read(make([]byte, 1))
			}
			c.Close()
		}
	}()
	for _, withKey := range []bool{false, true} {
		name := "plain"
		if withKey {
			name = "keyed"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				keyed <- withKey
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				if withKey {
					if _, err := l.Client(context.Background(), c, 5*time.Second); err != nil {
						b.Fatal(err)
					}
				}
				c.Close()
			}
		})
	}
}
