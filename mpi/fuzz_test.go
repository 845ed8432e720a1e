package mpi_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/mpi/mpibuild"
)

// harness is mpi/fuzz/harness.c, built once per test process, fed one
// input at a time.
type harness struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	errb *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// startHarness compiles the harness (under ASan and UBSan) into dir and
// starts it.
func startHarness(t testing.TB, dir string) *harness {
	t.Helper()
	if err := mpibuild.Check(); err != nil {
		t.Skip(err)
	}
	root, err := mpibuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	inc, err := mpibuild.Include()
	if err != nil {
		if errors.Is(err, mpibuild.ErrUnavailable) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "harness")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := filepath.Join(root, "mpi")
	files := []string{"-I" + inc, "-o", bin, filepath.Join(src, "fuzz", "harness.c"), filepath.Join(src, "src", "msgpack.c")}
	sanitized := append([]string{"-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"}, files...)
	if out, err := exec.CommandContext(ctx, "gcc", sanitized...).CombinedOutput(); err != nil {
		// a gcc without its sanitizer libraries: the harness still
		// catches crashes, not silent bad reads
		t.Logf("the fuzz harness without ASan/UBSan: %v\n%s", err, out)
		if out, err := exec.CommandContext(ctx, "gcc", append([]string{"-O1", "-g"}, files...)...).CombinedOutput(); err != nil {
			t.Fatalf("build the fuzz harness: %v\n%s", err, out)
		}
	}
	h := &harness{cmd: exec.Command(bin), errb: &lockedBuffer{}}
	h.cmd.Env = append(os.Environ(), "ASAN_OPTIONS=detect_leaks=0")
	h.cmd.Stderr = h.errb
	if h.in, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.out = bufio.NewReader(stdout)
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.in.Close()
		h.cmd.Wait()
	})
	return h
}

// feed decodes data in the harness; an error means it died on it.
func (h *harness) feed(data []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	if _, err := h.in.Write(append(n[:], data...)); err != nil {
		return fmt.Errorf("write: %w; harness said:\n%s", err, h.errb.String())
	}
	b, err := h.out.ReadByte()
	if err != nil || b != 'k' {
		return fmt.Errorf("no answer (%v); harness said:\n%s", err, h.errb.String())
	}
	return nil
}

func mustFrame(f *testing.F, t frame.Type, v any) []byte {
	b, err := frame.Encode(t, v)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzWire feeds the library's decoders (frames from the relay, payload
// headers from other ranks) with arbitrary bytes under ASan and UBSan;
// `make test` runs the seeds, `make fuzz` searches.
func FuzzWire(f *testing.F) {
	deliver := mustFrame(f, comm.FrameDeliver, &comm.Deliver{Req: 1<<32 | 5, Src: 3, Tag: 7, Data: []byte{0, 1, 2, 3}})
	sync := mustFrame(f, comm.FrameDeliver, &comm.Deliver{Req: 9, Src: 0, Tag: 1, Data: []byte{1, 0, 0, 0, 42, 9}})
	frag := mustFrame(f, comm.FrameDeliver, &comm.Deliver{Req: 9, Src: 0, Tag: 1, Data: []byte{2, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0x50, 0, 0, 7}})
	welcome := mustFrame(f, comm.FrameWelcome, map[string]any{"mode": "bcs", "v": 2})
	fatal := mustFrame(f, comm.FrameFatal, &comm.Fatal{Error: "job 3 has ended"})
	release := mustFrame(f, comm.FrameRelease, &comm.Release{Seq: 1 << 40})
	probed := mustFrame(f, 15, map[string]any{"r": uint64(1<<33 | 2), "f": true, "s": 1, "t": 5, "n": 1 << 22})
	bye := mustFrame(f, comm.FrameBye, &comm.Bye{})
	extra := mustFrame(f, comm.FrameDeliver, map[string]any{"r": 1, "zz": map[string]any{"a": []any{1, "x", nil, 2.5}}, "x": []byte{0}})
	numbered := mustFrame(f, comm.FrameDeliver, &comm.Deliver{Req: 3, Src: 1, Tag: 2, Data: []byte{0, 9}, Seq: 1 << 40})
	acked := mustFrame(f, comm.FrameAcked, &comm.Acked{Dst: 1, Seqs: []uint64{1, 2, 1 << 63, 300}})
	resend := mustFrame(f, comm.FrameResend, &comm.Resend{Dsts: []int{0, 5, 70000}})
	for _, seed := range [][]byte{
		deliver, sync, frag, welcome, fatal, release, probed, bye, extra, numbered, acked, resend,
		{0, 0, 0, 8, 1, 19, 0x81, 0xa1, 'q', 0xdc, 0xff, 0xff}, {0, 0, 0, 7, 1, 20, 0x81, 0xa1, 'd', 0x92, 0xff},
		append(append(append([]byte{}, welcome...), deliver...), release...),
		deliver[:len(deliver)-1], {0, 0, 0, 2, 1, 6}, {0xff, 0xff, 0xff, 0xff},
		{0, 0, 0, 9, 1, 6, 0x81, 0xa1, 'x', 0xc6, 0xff, 0xff, 0xff}, {0x81, 0xa1, 'x', 0xdd, 0xff, 0xff, 0xff, 0xff},
		{0xdf, 0x7f, 0xff, 0xff, 0xff}, {1}, {3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5}, {},
	} {
		f.Add(seed)
	}
	h := startHarness(f, f.TempDir())
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := h.feed(data); err != nil {
			t.Fatalf("the library's decoders failed on %x: %v", data, err)
		}
	})
}
