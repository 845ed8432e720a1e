package clusterkey

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Link authenticates long-lived TCP connections between nodes (control,
// relay) with the cluster key: TLS 1.3, both ends presenting the one
// certificate derived from the key for the link's purpose, and each
// checking that the other's is that one. In TLS 1.3 each end signs the
// handshake transcript, which holds both ends' fresh random values, with
// a label saying whether it is the client or the server: a challenge and
// response in both directions, bound to the role. After the handshake
// every record is sealed (AES-GCM with a per-direction sequence number),
// so frames can be neither forged, replayed, reordered nor read.
//
// A Link is safe for concurrent use.
type Link struct {
	purpose string
	pub     ed25519.PublicKey
	client  *tls.Config
	server  *tls.Config
}

// ErrNotCluster reports a peer whose certificate is not this cluster's
// for the link's purpose: it does not hold the key (or holds another).
var ErrNotCluster = errors.New("peer does not hold this cluster's key")

// Link derives the certificate for links of one purpose ("control",
// "relay"): a connection of one purpose cannot be opened to an endpoint
// of another. It does no I/O; the same key and purpose always give the
// same certificate.
func (k *Key) Link(purpose string) (*Link, error) {
	priv := ed25519.NewKeyFromSeed(k.Derive("link " + purpose)[:ed25519.SeedSize])
	pub := priv.Public().(ed25519.PublicKey)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "cosched " + purpose},
		NotBefore:    time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	// Ed25519 signatures are deterministic: rand is not read.
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, pub, priv)
	if err != nil {
		return nil, fmt.Errorf("clusterkey: %s link certificate: %w", purpose, err)
	}
	l := &Link{purpose: purpose, pub: pub}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv}
	verify := func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) != 1 {
			return fmt.Errorf("%w: %d certificates", ErrNotCluster, len(raw))
		}
		c, err := x509.ParseCertificate(raw[0])
		if err != nil {
			return fmt.Errorf("%w: %v", ErrNotCluster, err)
		}
		if p, ok := c.PublicKey.(ed25519.PublicKey); !ok || !bytes.Equal(p, l.pub) {
			return fmt.Errorf("%w (not the %s link's certificate)", ErrNotCluster, purpose)
		}
		return nil
	}
	base := tls.Config{
		MinVersion:            tls.VersionTLS13,
		Certificates:          []tls.Certificate{cert},
		VerifyPeerCertificate: verify,
	}
	l.server = base.Clone()
	l.server.ClientAuth = tls.RequireAnyClientCert // checked by verify
	l.server.SessionTicketsDisabled = true         // every connection proves the key afresh
	l.client = base.Clone()
	// The chain is checked by verify: one certificate, the cluster's.
	l.client.InsecureSkipVerify = true
	l.client.ServerName = "cosched-" + purpose
	return l, nil
}

// Client runs the handshake as the end that dialed conn, within ctx and at
// most timeout. On error conn is not closed; the error wraps ErrNotCluster
// when the peer answered without the key.
func (l *Link) Client(ctx context.Context, conn net.Conn, timeout time.Duration) (*tls.Conn, error) {
	return l.handshake(ctx, tls.Client(conn, l.client), timeout)
}

// Server runs the handshake as the end that accepted conn, as Client does.
// A peer that does not speak TLS (an agent without the key, say) fails it.
func (l *Link) Server(ctx context.Context, conn net.Conn, timeout time.Duration) (*tls.Conn, error) {
	return l.handshake(ctx, tls.Server(conn, l.server), timeout)
}

func (l *Link) handshake(ctx context.Context, tc *tls.Conn, timeout time.Duration) (*tls.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("%s link handshake: %w", l.purpose, err)
	}
	return tc, nil
}
