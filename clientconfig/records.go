package clientconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/aqlguard/aqlguard/internal/atomicfile"
)

// RecordsFile is where wrapped entries' originals are kept, in the state
// directory.
const RecordsFile = "wrapped.json"

// Record is what unwrap needs to restore one entry: its original bytes,
// and a digest of the bytes init put in their place (an entry edited
// since is not overwritten without --force).
type Record struct {
	File          string    `json:"file"`
	Entry         string    `json:"entry"`
	Client        string    `json:"client"`
	Original      string    `json:"original"`
	WrappedSHA256 string    `json:"wrapped_sha256"`
	WrappedAt     time.Time `json:"wrapped_at"`
}

// Records are the wrap records of one state directory.
type Records struct {
	path    string
	Entries map[string]Record `json:"entries"`
}

func recordKey(file, entry string) string { return file + "\x00" + entry }

// LoadRecords reads the records in dir (none yet is fine).
func LoadRecords(dir string) (*Records, error) {
	r := &Records{path: filepath.Join(dir, RecordsFile), Entries: map[string]Record{}}
	b, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("%s is damaged: %w", r.path, err)
	}
	if r.Entries == nil {
		r.Entries = map[string]Record{}
	}
	return r, nil
}

// Save writes the records atomically, readable only by their owner.
func (r *Records) Save() error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(r.path, append(b, '\n'), 0o600)
}

// Get returns the record of an entry of file.
func (r *Records) Get(file, entry string) (Record, bool) {
	rec, ok := r.Entries[recordKey(file, entry)]
	return rec, ok
}

func (r *Records) put(rec Record) { r.Entries[recordKey(rec.File, rec.Entry)] = rec }

func (r *Records) remove(file, entry string) { delete(r.Entries, recordKey(file, entry)) }

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
