package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"
)

// Layout of raft's FileSnapshotStore under a journal's directory.
const (
	snapshotDir       = "snapshots"
	snapshotMetaFile  = "meta.json"
	snapshotStateFile = "state.bin"
	snapshotTmpSuffix = ".tmp"
)

// snapshotMeta is what raft's FileSnapshotStore writes to meta.json.
type snapshotMeta struct {
	raft.SnapshotMeta
	CRC []byte
}

// verifySnapshots checks every snapshot under dir/snapshots (raft's file
// store would skip an unreadable one and fall back to an older one, or to
// none, silently) and returns the newest one's last index, 0 without any.
// Unfinished snapshots (".tmp", left by a crash while writing) are ignored,
// as raft ignores them.
func verifySnapshots(dir string) (newest uint64, size int64, err error) {
	root := filepath.Join(dir, snapshotDir)
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("journal: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() || strings.HasSuffix(e.Name(), snapshotTmpSuffix) {
			continue
		}
		meta, err := verifySnapshot(filepath.Join(root, e.Name()))
		if err != nil {
			return 0, 0, err
		}
		newest = max(newest, meta.Index)
		size += meta.Size
	}
	return newest, size, nil
}

func verifySnapshot(dir string) (*snapshotMeta, error) {
	metaPath := filepath.Join(dir, snapshotMetaFile)
	raw, err := os.ReadFile(metaPath)
	if err != nil {
		return nil, fmt.Errorf("journal: snapshot: %w", err)
	}
	var meta snapshotMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("journal: %s: not a snapshot description: %w", metaPath, err)
	}
	if meta.Version < raft.SnapshotVersionMin || meta.Version > raft.SnapshotVersionMax {
		return nil, fmt.Errorf("journal: %s: snapshot version %d, this build reads %d to %d", metaPath, meta.Version, raft.SnapshotVersionMin, raft.SnapshotVersionMax)
	}
	if meta.Index == 0 || meta.Size < 0 || len(meta.CRC) == 0 {
		return nil, fmt.Errorf("journal: %s: incomplete snapshot description (index %d, size %d, %d checksum bytes)", metaPath, meta.Index, meta.Size, len(meta.CRC))
	}
	statePath := filepath.Join(dir, snapshotStateFile)
	f, err := os.Open(statePath)
	if err != nil {
		return nil, fmt.Errorf("journal: snapshot: %w", err)
	}
	defer f.Close()
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("journal: %s: %w", statePath, err)
	}
	if n != meta.Size {
		return nil, fmt.Errorf("journal: %s: %d bytes, %s says %d (truncated snapshot)", statePath, n, snapshotMetaFile, meta.Size)
	}
	if sum := h.Sum(nil); !bytes.Equal(sum, meta.CRC) {
		return nil, fmt.Errorf("journal: %s: checksum mismatch (stored %x, computed %x)", statePath, meta.CRC, sum)
	}
	return &meta, nil
}
