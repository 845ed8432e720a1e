package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// batchVersion is the first byte of a raft command this package writes.
// Append-only: a new layout takes a new number; old ones stay readable.
const batchVersion = 1

// encodeBatch lays one Append's entries out as a single raft command, so
// they commit (and are applied) together or not at all: the version, the
// count, then each entry's length and bytes. The store's checksum covers it.
func encodeBatch(entries [][]byte) []byte {
	n := 1 + binary.MaxVarintLen64
	for _, e := range entries {
		n += binary.MaxVarintLen64 + len(e)
	}
	b := make([]byte, 0, n)
	b = append(b, batchVersion)
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(len(e)))
		b = append(b, e...)
	}
	return b
}

// decodeBatch is encodeBatch's inverse. The entries alias data. Every count
// and length is checked against the bytes that remain, so a damaged command
// cannot make it allocate more than data's length.
func decodeBatch(data []byte) ([][]byte, error) {
	if len(data) == 0 {
		return nil, errors.New("empty command")
	}
	if data[0] != batchVersion {
		return nil, fmt.Errorf("command version %d, this build reads %d", data[0], batchVersion)
	}
	data = data[1:]
	count, n := binary.Uvarint(data)
	if n <= 0 || count > uint64(len(data)) {
		return nil, errors.New("malformed entry count")
	}
	data = data[n:]
	entries := make([][]byte, 0, count)
	for i := range count {
		size, n := binary.Uvarint(data)
		if n <= 0 || size > uint64(len(data)-n) {
			return nil, fmt.Errorf("malformed length of entry %d", i)
		}
		entries = append(entries, data[n:n+int(size):n+int(size)])
		data = data[n+int(size):]
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%d bytes after the last entry", len(data))
	}
	return entries, nil
}
