// Package msgpackcheck vets a msgpack value from the network before it is
// decoded. msgpack.Unmarshal allocates a bin's or str's declared length
// before reading it, so an 11-byte message declaring a 2 GiB []byte would
// allocate 2 GiB; a pooled decoder keeps growing its buffer across calls.
// Check walks the value without decoding it and refuses any length that
// exceeds the bytes left, and deep nesting, so that after it nothing the
// decoder allocates exceeds the message's own size.
package msgpackcheck

import (
	"errors"
	"fmt"
)

// MaxDepth bounds the nesting of a value. cosched's messages nest at most
// three deep (a map of arrays of maps); the bound keeps the decoder's
// recursion (it also recurses into fields it skips) shallow.
const MaxDepth = 8

// ErrTruncated means a declared length runs past the end of the message.
var ErrTruncated = errors.New("msgpack value runs past the end of the message")

// Check walks the msgpack value at the start of body (bytes after it are
// not looked at) and refuses lengths that exceed the bytes left, nesting
// deeper than MaxDepth, and invalid bytes.
func Check(body []byte) error {
	var stack [16]uint64         // the usual depths, without an allocation
	left := append(stack[:0], 1) // values still due at each open nesting level
	i := 0
	// size reads a k-byte big-endian length at i.
	size := func(k int) (uint64, error) {
		if len(body)-i < k {
			return 0, ErrTruncated
		}
		var n uint64
		for _, b := range body[i : i+k] {
			n = n<<8 | uint64(b)
		}
		i += k
		return n, nil
	}
	for len(left) > 0 {
		top := len(left) - 1
		if left[top] == 0 {
			left = left[:top]
			continue
		}
		left[top]--
		if i >= len(body) {
			return ErrTruncated
		}
		c := body[i]
		i++
		var payload, values uint64 // bytes to skip, values contained
		var err error
		switch {
		case c <= 0x7f, c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3: // fixint, nil, bool
		case c <= 0x8f: // fixmap
			values = 2 * uint64(c&0x0f)
		case c <= 0x9f: // fixarray
			values = uint64(c & 0x0f)
		case c <= 0xbf: // fixstr
			payload = uint64(c & 0x1f)
		case c == 0xc4 || c == 0xd9: // bin8, str8
			payload, err = size(1)
		case c == 0xc5 || c == 0xda: // bin16, str16
			payload, err = size(2)
		case c == 0xc6 || c == 0xdb: // bin32, str32
			payload, err = size(4)
		case c == 0xc7, c == 0xc8, c == 0xc9: // ext8/16/32: length, then a type byte
			payload, err = size(1 << (c - 0xc7))
			payload++
		case c == 0xca, c == 0xce, c == 0xd2: // float32, uint32, int32
			payload = 4
		case c == 0xcb, c == 0xcf, c == 0xd3: // float64, uint64, int64
			payload = 8
		case c == 0xcc, c == 0xd0: // uint8, int8
			payload = 1
		case c == 0xcd, c == 0xd1: // uint16, int16
			payload = 2
		case c >= 0xd4 && c <= 0xd8: // fixext 1, 2, 4, 8, 16, after a type byte
			payload = 1 + 1<<(c-0xd4)
		case c == 0xdc: // array16
			values, err = size(2)
		case c == 0xdd: // array32
			values, err = size(4)
		case c == 0xde: // map16
			values, err = size(2)
			values *= 2
		case c == 0xdf: // map32
			values, err = size(4)
			values *= 2
		default: // 0xc1: never used
			return fmt.Errorf("invalid msgpack byte %#x at offset %d", c, i-1)
		}
		if err != nil {
			return err
		}
		rest := uint64(len(body) - i)
		switch {
		case payload > rest:
			return fmt.Errorf("%w: %d bytes declared at offset %d, %d left", ErrTruncated, payload, i, rest)
		case values > rest: // every value takes at least a byte
			return fmt.Errorf("%w: %d values declared at offset %d, %d bytes left", ErrTruncated, values, i, rest)
		}
		i += int(payload)
		if values > 0 {
			if len(left) == MaxDepth {
				return fmt.Errorf("msgpack nesting deeper than %d", MaxDepth)
			}
			left = append(left, values)
		}
	}
	return nil
}
