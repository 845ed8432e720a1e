package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"runtime/debug"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// logFile is the name of the log and stable store inside a journal's
// directory. One bbolt file holds both, as raft-boltdb lays them out.
const logFile = "raft.db"

var (
	bucketLogs   = []byte("logs")
	bucketStable = []byte("conf")

	// errKeyNotFound is what raft expects from a StableStore for a missing
	// key: it compares the error's text with "not found".
	errKeyNotFound = errors.New("not found")

	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// recordVersion is the first byte after a record's checksum. Append-only:
// a newer layout takes a new number and the reader keeps the old ones.
const recordVersion = 1

// boltStore is raft's LogStore and StableStore over one bbolt file.
//
// bbolt makes every transaction atomic and fsyncs it at commit, so a batch
// of log entries that StoreLogs returns for is on disk. bbolt checksums only
// its meta pages, so every value carries its own CRC-32C: a flipped bit in a
// log entry is an error naming the entry, never a silently different job.
// (raft-boltdb/v2 would be the stock choice, but v2.3.1 imports
// go-metrics/compat, which go-metrics v0.7.0 — required by memberlist and
// raft v1.8.0 — no longer has; this store keeps its bucket layout.)
type boltStore struct {
	db   *bolt.DB
	path string
}

// openBoltStore opens (creating if absent) the store at path and checks it
// whole: bbolt's page structure, the file's length against the pages it
// claims, every record's checksum, and that the log has no hole after
// snapshotIndex (the newest snapshot's last index; 0 without one).
func openBoltStore(path string, snapshotIndex uint64) (s *boltStore, err error) {
	if info, err := os.Stat(path); err == nil && info.Size() == 0 {
		return nil, fmt.Errorf("journal: %s: empty file (truncated journal)", path)
	}
	// bbolt maps the file and trusts its pages: reading a page past the end
	// of a truncated file faults (SIGBUS), a damaged page can make it
	// panic. Both become errors here instead of a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var db *bolt.DB
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				_ = db.Close()
			}
			s, err = nil, fmt.Errorf("journal: %s: unreadable database page (truncated or damaged file): %v", path, r)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		switch {
		case errors.Is(err, bolterrors.ErrTimeout):
			return nil, fmt.Errorf("journal: %s: locked by another process (is another agent using this state directory?)", path)
		case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrVersionMismatch):
			return nil, fmt.Errorf("journal: %s: not a readable journal database: %w", path, err)
		}
		return nil, fmt.Errorf("journal: %s: %w", path, err)
	}
	s = &boltStore{db: db, path: path}
	if err := s.init(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := s.verify(snapshotIndex); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

func (s *boltStore) init() error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketLogs); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketStable)
		return err
	})
	if err != nil {
		return fmt.Errorf("journal: %s: %w", s.path, err)
	}
	return nil
}

// verify reads the whole store once. It runs before raft sees the store, so
// a damaged journal stops Open with the file and the reason.
func (s *boltStore) verify(snapshotIndex uint64) error {
	info, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return s.db.View(func(tx *bolt.Tx) error {
		if need := tx.Size(); info.Size() < need {
			return fmt.Errorf("journal: %s: truncated: the file has %d bytes, its pages need %d", s.path, info.Size(), need)
		}
		var checkErr error
		for cerr := range tx.Check() {
			if checkErr == nil {
				checkErr = fmt.Errorf("journal: %s: corrupt database: %w", s.path, cerr)
			}
		}
		if checkErr != nil {
			return checkErr
		}
		logs, stable := tx.Bucket(bucketLogs), tx.Bucket(bucketStable)
		if logs == nil || stable == nil {
			return fmt.Errorf("journal: %s: not a journal database (buckets %q and %q missing)", s.path, bucketLogs, bucketStable)
		}
		var prev uint64
		var l raft.Log
		cerr := logs.ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("journal: %s: log key of %d bytes, want 8", s.path, len(k))
			}
			idx := binary.BigEndian.Uint64(k)
			if err := decodeLog(v, idx, &l); err != nil {
				return fmt.Errorf("journal: %s: %w", s.path, err)
			}
			// Entries at or below the snapshot may have holes (raft leaves
			// them after installing a snapshot); after it they may not.
			if prev != 0 && idx != prev+1 && idx > snapshotIndex+1 {
				return fmt.Errorf("journal: %s: entries %d to %d are missing", s.path, prev+1, idx-1)
			}
			if prev == 0 && idx > snapshotIndex+1 {
				if snapshotIndex == 0 {
					return fmt.Errorf("journal: %s: the log starts at entry %d and there is no snapshot: entries 1 to %d are missing", s.path, idx, idx-1)
				}
				return fmt.Errorf("journal: %s: the log starts at entry %d but the newest snapshot ends at %d: entries %d to %d are missing", s.path, idx, snapshotIndex, snapshotIndex+1, idx-1)
			}
			prev = idx
			return nil
		})
		if cerr != nil {
			return cerr
		}
		return stable.ForEach(func(k, v []byte) error {
			if _, err := unseal(v); err != nil {
				return fmt.Errorf("journal: %s: stable key %q: %w", s.path, k, err)
			}
			return nil
		})
	})
}

// size is the file's length in bytes (the journal's size on disk, less
// snapshots).
func (s *boltStore) size() int64 {
	info, err := os.Stat(s.path)
	if err != nil {
		return 0
	}
	return info.Size()
}

func (s *boltStore) close() error { return s.db.Close() }

// FirstIndex implements raft.LogStore.
func (s *boltStore) FirstIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().First(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// LastIndex implements raft.LogStore.
func (s *boltStore) LastIndex() (uint64, error) {
	var idx uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().Last(); k != nil {
			idx = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return idx, err
}

// GetLog implements raft.LogStore.
func (s *boltStore) GetLog(index uint64, l *raft.Log) error {
	return s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLogs).Get(indexKey(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		if err := decodeLog(v, index, l); err != nil {
			return fmt.Errorf("journal: %s: %w", s.path, err)
		}
		return nil
	})
}

// StoreLog implements raft.LogStore.
func (s *boltStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs implements raft.LogStore: one transaction, one fsync, however
// many entries (raft hands the leader's queued applies over together).
func (s *boltStore) StoreLogs(logs []*raft.Log) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		for _, l := range logs {
			if err := b.Put(indexKey(l.Index), encodeLog(l)); err != nil {
				return fmt.Errorf("journal: %s: storing entry %d: %w", s.path, l.Index, err)
			}
		}
		return nil
	})
}

// DeleteRange implements raft.LogStore (inclusive bounds).
func (s *boltStore) DeleteRange(lo, hi uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		for k, _ := c.Seek(indexKey(lo)); k != nil && binary.BigEndian.Uint64(k) <= hi; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Set implements raft.StableStore.
func (s *boltStore) Set(k, v []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketStable).Put(k, seal(v))
	})
}

// Get implements raft.StableStore.
func (s *boltStore) Get(k []byte) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketStable).Get(k)
		if v == nil {
			return errKeyNotFound
		}
		body, err := unseal(v)
		if err != nil {
			return fmt.Errorf("journal: %s: stable key %q: %w", s.path, k, err)
		}
		out = append([]byte(nil), body...)
		return nil
	})
	return out, err
}

// SetUint64 implements raft.StableStore.
func (s *boltStore) SetUint64(k []byte, v uint64) error {
	return s.Set(k, binary.BigEndian.AppendUint64(nil, v))
}

// GetUint64 implements raft.StableStore.
func (s *boltStore) GetUint64(k []byte) (uint64, error) {
	v, err := s.Get(k)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("journal: %s: stable key %q holds %d bytes, want 8", s.path, k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func indexKey(i uint64) []byte { return binary.BigEndian.AppendUint64(nil, i) }

// seal prefixes body with the CRC-32C of the version byte and body.
func seal(body []byte) []byte {
	out := make([]byte, 5, 5+len(body))
	out[4] = recordVersion
	out = append(out, body...)
	binary.BigEndian.PutUint32(out, crc32.Checksum(out[4:], castagnoli))
	return out
}

// unseal checks a sealed value and returns its body (aliasing v).
func unseal(v []byte) ([]byte, error) {
	if len(v) < 5 {
		return nil, fmt.Errorf("record of %d bytes is too short", len(v))
	}
	if got, want := crc32.Checksum(v[4:], castagnoli), binary.BigEndian.Uint32(v); got != want {
		return nil, fmt.Errorf("checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	if v[4] != recordVersion {
		return nil, fmt.Errorf("record version %d, this build reads %d", v[4], recordVersion)
	}
	return v[5:], nil
}

// encodeLog lays a raft entry out as index, term, type, appended-at (Unix
// nanoseconds, 0 for none), extensions and data, sealed.
func encodeLog(l *raft.Log) []byte {
	b := make([]byte, 0, 32+len(l.Extensions)+len(l.Data))
	b = binary.AppendUvarint(b, l.Index)
	b = binary.AppendUvarint(b, l.Term)
	b = append(b, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	b = binary.AppendVarint(b, at)
	b = binary.AppendUvarint(b, uint64(len(l.Extensions)))
	b = append(b, l.Extensions...)
	b = append(b, l.Data...)
	return seal(b)
}

// decodeLog checks and decodes the entry stored under index. Data and
// Extensions are copied: bbolt's memory is valid only inside its
// transaction.
func decodeLog(v []byte, index uint64, l *raft.Log) error {
	body, err := unseal(v)
	if err != nil {
		return fmt.Errorf("entry %d: %w", index, err)
	}
	bad := func(what string) error { return fmt.Errorf("entry %d: malformed %s", index, what) }
	idx, n := binary.Uvarint(body)
	if n <= 0 {
		return bad("index")
	}
	if idx != index {
		return fmt.Errorf("entry %d: stored under the wrong key (it says it is entry %d)", index, idx)
	}
	body = body[n:]
	term, n := binary.Uvarint(body)
	if n <= 0 {
		return bad("term")
	}
	body = body[n:]
	if len(body) < 1 {
		return bad("type")
	}
	typ := raft.LogType(body[0])
	body = body[1:]
	at, n := binary.Varint(body)
	if n <= 0 {
		return bad("time")
	}
	body = body[n:]
	extLen, n := binary.Uvarint(body)
	if n <= 0 || extLen > uint64(len(body)-n) {
		return bad("extensions")
	}
	body = body[n:]
	*l = raft.Log{Index: idx, Term: term, Type: typ}
	if extLen > 0 {
		l.Extensions = append([]byte(nil), body[:extLen]...)
	}
	if rest := body[extLen:]; len(rest) > 0 {
		l.Data = append([]byte(nil), rest...)
	}
	if at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	return nil
}
