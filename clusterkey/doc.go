// Package clusterkey authenticates users and cluster traffic with the one
// secret every node of a cluster shares (MUNGE's model).
//
// A Key is 32 random bytes kept in a file readable only by its owner
// (Load refuses anything looser than 0600). With it a node can:
//
//   - mint and verify tokens (Token): a uid, a gid, an expiry and a nonce,
//     HMAC-SHA256-signed, carried by HTTP requests as
//     "Authorization: Cosched <token>";
//   - seal and open packets (Seal, Open): a payload with a sender id and a
//     monotonic sequence number, MAC'd, for datagrams such as strobes and
//     heartbeats; a ReplayWindow per sender rejects replays and packets
//     older than the window;
//   - authenticate TCP links between nodes (Link): TLS 1.3 where both
//     ends present the certificate derived from the key for the link's
//     purpose and refuse any other.
//
// Everything except Load, Generate and a Link's handshakes is pure: time comes in as an
// argument, randomness through an io.Reader, and parsers bound every size
// before they allocate, so they are safe on hostile input (see the fuzz
// tests).
package clusterkey
