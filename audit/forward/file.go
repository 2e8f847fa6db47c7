package forward

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/aqlguard/aqlguard/audit"
	"github.com/aqlguard/aqlguard/store"
)

// File appends records to a file as OCSF API Activity events (one per
// line; audit.OCSF, the record's seq, hash and prev under unmapped), and
// fsyncs before the cursor moves. A line cut short by a crash is cut
// away when the file is opened again, so the file holds whole events.
type File struct {
	Path    string
	Product string // aqlguard's version, in each event's metadata
	f       *os.File
}

func (s *File) Destination() string { return "file " + s.Path }

func (s *File) open() error {
	if s.f != nil {
		return nil
	}
	f, err := os.OpenFile(s.Path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := cutTornTail(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", s.Path, err)
	}
	s.f = f
	return nil
}

// cutTornTail truncates f after its last newline and leaves the offset
// at the end.
func cutTornTail(f *os.File) error {
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	keep := end
	buf := make([]byte, 4096)
	for keep > 0 {
		n := int64(len(buf))
		if keep < n {
			n = keep
		}
		if _, err := f.ReadAt(buf[:n], keep-n); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep = keep - n + int64(i) + 1
			break
		}
		keep -= n
	}
	if keep != end {
		if err := f.Truncate(keep); err != nil {
			return err
		}
	}
	_, err = f.Seek(keep, io.SeekStart)
	return err
}

// Send appends the batch and fsyncs it: then all of it is delivered.
func (s *File) Send(_ context.Context, batch []store.LogEntry) (uint64, error) {
	if len(batch) == 0 {
		return 0, nil
	}
	if err := s.write(batch); err != nil {
		return 0, err
	}
	return batch[len(batch)-1].Record.Seq, nil
}

func (s *File) write(batch []store.LogEntry) error {
	if err := s.open(); err != nil {
		return err
	}
	var b bytes.Buffer
	for _, e := range batch {
		line, err := json.Marshal(audit.OCSF(e.Record, s.Product))
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if _, err := s.f.Write(b.Bytes()); err != nil {
		// Whatever part of it was written is cut away before the next try.
		s.Close()
		return err
	}
	if err := s.f.Sync(); err != nil {
		s.Close()
		return err
	}
	return nil
}

func (s *File) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
