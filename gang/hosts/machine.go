package hosts

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Host is one shared-memory machine: a job runs on one host and needs its
// processors and memory there.
type Host struct {
	Name       string
	Processors int
	// Memory is the host's memory in bytes; 0 means unlimited.
	Memory int64
}

// MachineError is a problem with one line of a machine file.
type MachineError struct {
	File  string
	Line  int
	Field string // "name", "processors", "memory", or "" for the whole line
	Value string
	Err   error
}

func (e *MachineError) Error() string {
	where := fmt.Sprintf("%s:%d", e.File, e.Line)
	if e.Field != "" {
		return fmt.Sprintf("%s: %s %q: %v", where, e.Field, e.Value, e.Err)
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

func (e *MachineError) Unwrap() error { return e.Err }

// ParseMachine reads a machine file: one host per line,
//
//	name processors memory
//
// with memory a number and an optional unit (B, KB, MB, GB, TB; 1 KB =
// 1024 B; KiB, MiB, GiB, TiB too), e.g. "64 16GB", or "-" for unlimited.
// A # starts a comment; blank lines are ignored. Host names must be
// unique. name labels errors (file name).
func ParseMachine(r io.Reader, name string) ([]Host, error) {
	var hosts []Host
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		bad := func(field, value string, err error) error {
			return &MachineError{File: name, Line: line, Field: field, Value: value, Err: err}
		}
		if len(fields) != 3 {
			return nil, bad("", "", fmt.Errorf("want 3 fields (name processors memory), got %d", len(fields)))
		}
		h := Host{Name: fields[0]}
		if prev, ok := seen[h.Name]; ok {
			return nil, bad("name", h.Name, fmt.Errorf("host already defined on line %d", prev))
		}
		seen[h.Name] = line
		p, err := strconv.Atoi(fields[1])
		if err != nil || p < 1 {
			return nil, bad("processors", fields[1], errors.New("want a whole number of at least 1"))
		}
		h.Processors = p
		if h.Memory, err = ParseMemory(fields[2]); err != nil {
			return nil, bad("memory", fields[2], err)
		}
		hosts = append(hosts, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%s: no hosts (want lines of: name processors memory)", name)
	}
	return hosts, nil
}

var memUnits = []struct {
	suffix string
	scale  float64
}{
	{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
	{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"TB", 1 << 40},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ParseMemory reads an amount of memory: a non-negative number with an
// optional unit (B, KB, MB, GB, TB, binary: 1 KB = 1024 B; also KiB… and K,
// M, G, T), e.g. "16GB" or "1.5G"; a bare number is bytes. "-" is
// unlimited (0). A positive amount is at least one byte.
func ParseMemory(text string) (int64, error) {
	if text == "-" {
		return 0, nil
	}
	num, scale := strings.ToUpper(strings.TrimSpace(text)), 1.0
	for _, u := range memUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, scale = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.scale
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) || v*scale >= math.MaxInt64/4 {
		return 0, errors.New("want a positive amount with an optional unit (e.g. 16GB, 512MB), or - for unlimited")
	}
	return max(int64(math.Round(v*scale)), 1), nil
}

// FormatMemory writes bytes in the largest binary unit that keeps it
// short: 16GB, 1.5GB, 512MB; 0 is "-" (unlimited).
func FormatMemory(b int64) string {
	if b <= 0 {
		return "-"
	}
	for _, u := range []struct {
		s string
		v float64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}} {
		if float64(b) >= u.v {
			return strconv.FormatFloat(math.Round(float64(b)/u.v*100)/100, 'f', -1, 64) + u.s
		}
	}
	return strconv.FormatInt(b, 10) + "B"
}
