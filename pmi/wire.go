package pmi

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// The protocol's bounds. get_maxes announces the KVS name, key and value
// bounds hydra announces; a command is one line of at most MaxLine bytes,
// newline included: room for a put of the longest name, key and value
// (MPICH's client itself sends lines of at most 1024 bytes).
const (
	MaxLine    = 1536
	MaxKVSName = 256
	MaxKey     = 64
	MaxValue   = 1024
	// maxFields bounds the key=value pairs of one command (the longest
	// PMI-1 command, put, has four).
	maxFields = 16
)

// Command is one parsed PMI-1 command: cmd=Name followed by key=value
// pairs separated by spaces.
type Command struct {
	Name string
	Args map[string]string
}

// Parse parses one command line, without its newline. It rejects lines
// longer than MaxLine, a first field that is not cmd=, fields without =,
// empty keys, repeated keys and more than maxFields fields: MPICH's own
// parser (PMIU_parse_keyvals) has the same shape, and a value never holds
// a space.
func Parse(line []byte) (Command, error) {
	if len(line) >= MaxLine {
		return Command{}, fmt.Errorf("line of %d bytes: longer than the protocol's %d", len(line), MaxLine-1)
	}
	fields := bytes.Fields(line)
	if len(fields) == 0 {
		return Command{}, errors.New("empty line")
	}
	if len(fields) > maxFields {
		return Command{}, fmt.Errorf("%d fields: more than %d", len(fields), maxFields)
	}
	c := Command{Args: make(map[string]string, len(fields)-1)}
	for i, f := range fields {
		k, v, ok := bytes.Cut(f, []byte("="))
		if !ok || len(k) == 0 {
			return Command{}, fmt.Errorf("field %q: want key=value", truncate(f))
		}
		if i == 0 {
			if string(k) != "cmd" || len(v) == 0 {
				return Command{}, fmt.Errorf("first field %q: want cmd=NAME", truncate(f))
			}
			c.Name = string(v)
			continue
		}
		if _, dup := c.Args[string(k)]; dup || string(k) == "cmd" {
			return Command{}, fmt.Errorf("key %q repeated", truncate(k))
		}
		c.Args[string(k)] = string(v)
	}
	return c, nil
}

// Encode renders a reply: cmd=name then the pairs kv (key, value, key,
// value, …) in order, newline-terminated. Values must not hold spaces or
// newlines; Encode replaces them with '_' so a reply is always one line.
func Encode(name string, kv ...string) []byte {
	b := append([]byte("cmd="), name...)
	for i := 0; i+1 < len(kv); i += 2 {
		b = append(b, ' ')
		b = append(b, kv[i]...)
		b = append(b, '=')
		b = append(b, clean(kv[i+1])...)
	}
	return append(b, '\n')
}

func clean(s string) []byte {
	b := []byte(s)
	for i, c := range b {
		if c == ' ' || c == '\n' || c == '\r' || c == '\t' {
			b[i] = '_'
		}
	}
	return b
}

// truncate shortens a field quoted in an error message.
func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

func itoa(i int) string { return strconv.Itoa(i) }
