package swf

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cosched/cosched/internal/ctxio"
)

// Open opens the SWF file at path, transparently decompressing gzip. The
// gzip magic bytes decide, not the file name, since archive files are often
// renamed. The returned closer closes the decompressor and the file; close
// it when done with the Reader, also after an error from Next.
func Open(path string, opts ...Option) (*Reader, io.Closer, error) {
	return OpenContext(context.Background(), path, opts...)
}

// OpenContext is Open whose reads fail with ctx's cause once ctx is done,
// so that a command reading a large trace stops when it is interrupted.
func OpenContext(ctx context.Context, path string, opts ...Option) (*Reader, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("swf: %w", err)
	}
	r, c, err := OpenReader(ctxio.Reader(ctx, f), path, opts...)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	c.(*closer).f = f
	return r, c, nil
}

// OpenReader is Open for any io.Reader (standard input, embedded data):
// it detects gzip by its magic bytes and decompresses it. The closer closes
// the decompressor, not src.
func OpenReader(src io.Reader, name string, opts ...Option) (*Reader, io.Closer, error) {
	br := bufio.NewReaderSize(src, readBufferSize)
	c := &closer{}
	var in io.Reader = br
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF {
		return nil, nil, fmt.Errorf("swf: read %s: %w", name, err)
	}
	gz := len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b
	if gz {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("swf: read %s: %w: corrupt gzip header (%v)", name, ErrNotGzip, err)
		}
		c.zr = zr
		in = corruptGzip{zr}
	}
	r, err := NewReader(in, name, opts...)
	if err != nil {
		c.Close()
		if !gz && strings.HasSuffix(strings.ToLower(name), ".gz") && errors.Is(err, ErrNotSWF) {
			// Named .gz, no gzip header, and not SWF as plain text either.
			return nil, nil, fmt.Errorf("swf: read %s: %w (no gzip header) and %w", name, ErrNotGzip, ErrNotSWF)
		}
		return nil, nil, err
	}
	return r, c, nil
}

// corruptGzip names a decompression failure as such: "unexpected EOF"
// alone does not say that the file is a truncated gzip stream.
type corruptGzip struct{ zr *gzip.Reader }

func (g corruptGzip) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("truncated or corrupt gzip data: %w", err)
	}
	return n, err
}

type closer struct {
	f  *os.File // nil for OpenReader
	zr *gzip.Reader
}

func (c *closer) Close() error {
	var zerr, ferr error
	if c.zr != nil {
		zerr = c.zr.Close()
	}
	if c.f != nil {
		ferr = c.f.Close()
	}
	if err := errors.Join(zerr, ferr); err != nil {
		return fmt.Errorf("swf: close: %w", err)
	}
	return nil
}

// StdinPath is the path OpenInput reads standard input for, and StdinName
// the name it gives that input in errors.
const (
	StdinPath = "-"
	StdinName = "<stdin>"
)

// ErrDirectory is the error of OpenInput given a directory.
var ErrDirectory = errors.New("is a directory, not an SWF file")

// OpenInput opens the SWF file at path (OpenContext), or stdin for
// StdinPath, as a command's input: reads of stdin also return once ctx is
// done, even while stdin blocks. A path that cannot be examined or opened,
// or is a directory (ErrDirectory), is an *fs.PathError.
func OpenInput(ctx context.Context, path string, stdin io.Reader) (*Reader, io.Closer, error) {
	if path == StdinPath {
		return OpenReader(ctxio.Interruptible(ctx, stdin), StdinName)
	}
	if st, err := os.Stat(path); err != nil {
		return nil, nil, err
	} else if st.IsDir() {
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: ErrDirectory}
	}
	return OpenContext(ctx, path)
}

// InputName is how a model or report names the input at path:
// StdinName, or the file's base name.
func InputName(path string) string {
	if path == StdinPath {
		return StdinName
	}
	return filepath.Base(path)
}
