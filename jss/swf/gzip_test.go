package swf

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"
)

// Broken gzip and a .gz file that is no gzip are named as such.
func TestNotGzip(t *testing.T) {
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(strings.Repeat("; MaxProcs: 4\n", 1000)))
	zw.Close()
	full := zb.Bytes()

	// The gzip magic, then garbage: a corrupt header.
	if _, _, err := OpenReader(bytes.NewReader([]byte("\x1f\x8bxxxxxxxxxxxx")), "bad.gz"); !errors.Is(err, ErrNotGzip) || !strings.Contains(err.Error(), "bad.gz: not gzip: corrupt gzip header") {
		t.Errorf("corrupt header: %v", err)
	}
	// A truncated stream: the error says gzip, not only "unexpected EOF".
	r, c, err := OpenReader(bytes.NewReader(full[:len(full)/2]), "cut.gz")
	if err == nil {
		defer c.Close()
		_, err = r.Next()
	}
	if err == nil || err == io.EOF || !strings.Contains(err.Error(), "truncated or corrupt gzip data") {
		t.Errorf("truncated: %v", err)
	}
	// Named .gz, neither gzip nor SWF.
	if _, _, err := OpenReader(strings.NewReader("hello\n"), "trace.swf.gz"); !errors.Is(err, ErrNotGzip) || !errors.Is(err, ErrNotSWF) ||
		!strings.Contains(err.Error(), "trace.swf.gz: not gzip (no gzip header) and not an SWF file") {
		t.Errorf("not gzip: %v", err)
	}
	// A plain SWF file named .gz is still read: the magic decides.
	if _, _, err := OpenReader(strings.NewReader("; MaxProcs: 4\n"), "plain.gz"); err != nil {
		t.Errorf("plain named .gz: %v", err)
	}
}
