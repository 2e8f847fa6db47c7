package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func verify(t *testing.T, s *Store) uint64 {
	t.Helper()
	var n uint64
	if err := s.View(context.Background(), func(tx *Tx) (err error) { n, err = tx.VerifyChain(); return }); err != nil {
		t.Fatalf("VerifyChain: %v", err)
	}
	return n
}

// TestAuditLogRotates: segments close at their size bound and the chain
// runs on across them.
func TestAuditLogRotates(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), dir, Options{SegmentBytes: 2000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 40 {
		if err := s.Append(context.Background(), Record{Time: t0.Add(time.Duration(i) * time.Second), Kind: "outcome", Principal: "p", Operation: "op"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := verify(t, s); n != 40 {
		t.Fatalf("%d records verified, want 40", n)
	}
	ns, _ := s.log.segments()
	if len(ns) < 3 {
		t.Fatalf("%d segments, want several at 2000 bytes each", len(ns))
	}
	// Taking a segment out of the middle breaks the chain.
	if err := os.Remove(filepath.Join(dir, AuditDir, segmentName(ns[1]))); err != nil {
		t.Fatal(err)
	}
	err = s.View(context.Background(), func(tx *Tx) error { _, err := tx.VerifyChain(); return err })
	if !errors.Is(err, ErrChainBroken) {
		t.Fatalf("VerifyChain without a middle segment = %v, want ErrChainBroken", err)
	}
}

// TestAuditLogRotatesByAge: a segment older than its age bound is closed.
func TestAuditLogRotatesByAge(t *testing.T) {
	s, err := Open(context.Background(), t.TempDir(), Options{SegmentAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, at := range []time.Time{t0, t0.Add(30 * time.Minute), t0.Add(2 * time.Hour)} {
		if err := s.Append(context.Background(), Record{Time: at, Kind: "outcome", Principal: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	if ns, _ := s.log.segments(); len(ns) != 2 {
		t.Fatalf("%d segments, want 2 (the third record is two hours on)", len(ns))
	}
	verify(t, s)
}

// TestAuditLogTornWrite: a segment that ends in half a record (a power
// cut mid-write) does not verify, and the next append starts clean.
func TestAuditLogTornWrite(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_ = s.Append(context.Background(), Record{Time: t0, Kind: "outcome", Principal: "p"})
	f, _ := os.OpenFile(filepath.Join(dir, AuditDir, segmentName(1)), os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.WriteString(`{"seq":2,"time":"2026-`)
	f.Close()
	err = s.View(context.Background(), func(tx *Tx) error { _, err := tx.VerifyChain(); return err })
	if !errors.Is(err, ErrTornTail) || errors.Is(err, ErrChainBroken) {
		t.Fatalf("VerifyChain with a torn record = %v, want ErrTornTail (not tampering)", err)
	}
	// Another process (a restart) appends: into a new segment; the torn
	// one stays as it was, and still says so.
	s2, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Append(context.Background(), Record{Time: t0, Kind: "outcome", Principal: "p"}); err != nil {
		t.Fatal(err)
	}
	torn, _ := os.ReadFile(filepath.Join(dir, AuditDir, segmentName(1)))
	if !strings.HasSuffix(string(torn), `{"seq":2,"time":"2026-`) {
		t.Fatalf("the torn segment was written to: %q", torn)
	}
	if ns, _ := s2.log.segments(); len(ns) != 2 {
		t.Fatalf("segments %v: the next record must start a new one", ns)
	}
	err = s2.View(context.Background(), func(tx *Tx) error { _, err := tx.VerifyChain(); return err })
	if !errors.Is(err, ErrTornTail) {
		t.Fatalf("VerifyChain with a torn segment kept = %v, want ErrTornTail", err)
	}
	// Sealing records the torn bytes as evidence: verify passes, with
	// the gap acknowledged, and the torn segment is as it was.
	recs, err := s2.Seal(context.Background(), "tester", "host/1", t0)
	if err != nil || len(recs) != 1 || recs[0].Gap == nil || recs[0].Gap.Bytes != int64(len(`{"seq":2,"time":"2026-`)) {
		t.Fatalf("Seal = %+v, %v", recs, err)
	}
	var v *ChainVerifier
	err = s2.View(context.Background(), func(tx *Tx) (err error) { v, err = tx.VerifyChainDetail(); return })
	if err != nil || len(v.Acknowledged()) != 1 {
		t.Fatalf("VerifyChain after seal = %v (acknowledged %v)", err, v.Acknowledged())
	}
	if again, _ := os.ReadFile(filepath.Join(dir, AuditDir, segmentName(1))); string(again) != string(torn) {
		t.Fatal("sealing changed the torn segment")
	}
	if recs, err := s2.Seal(context.Background(), "tester", "host/1", t0); err != nil || len(recs) != 0 {
		t.Fatalf("a second Seal = %+v, %v; want nothing to seal", recs, err)
	}
	// Other bytes in its place are not what was sealed.
	if err := os.WriteFile(filepath.Join(dir, AuditDir, segmentName(1)), append(torn[:len(torn)-1:len(torn)-1], 'X'), 0o600); err != nil {
		t.Fatal(err)
	}
	err = s2.View(context.Background(), func(tx *Tx) error { _, err := tx.VerifyChain(); return err })
	if !errors.Is(err, ErrTornTail) {
		t.Fatalf("VerifyChain with other torn bytes than sealed = %v, want ErrTornTail", err)
	}
}

// TestAuditLogTwoProcesses: two stores on one state directory (two
// aqlguard processes) append at once; the log is one chain.
func TestAuditLogTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a, err := Open(ctx, dir, Options{Timeout: time.Minute, SegmentBytes: 4000})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, dir, Options{Timeout: time.Minute, SegmentBytes: 4000, AuditSync: SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := []*Store{a, b}[i%2]
			var err error
			if i%3 == 0 {
				err = s.Update(ctx, func(tx *Tx) error { return tx.Append(Record{Time: t0, Kind: "decision", Principal: "p"}) })
			} else {
				err = s.Append(ctx, Record{Time: t0, Kind: "outcome", Principal: "p"})
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := verify(t, a); n != 60 {
		t.Fatalf("%d records, want 60", n)
	}
}

// TestAuditLogMigrates: a database whose records are still in bbolt (from
// before the log had files) has them moved, byte for byte, into the
// first segment, and the chain goes on from there.
func TestAuditLogMigrates(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var raws [][]byte
	head := auditHead{Hash: GenesisHash}
	_ = db.Update(func(tx *bolt.Tx) error {
		audit, _ := tx.CreateBucketIfNotExists(bucketAudit)
		meta, _ := tx.CreateBucketIfNotExists(bucketMeta)
		for i := range 5 {
			r := Record{Seq: head.Seq + 1, Prev: head.Hash, Time: t0.Add(time.Duration(i) * time.Second), Kind: "decision", Principal: "p"}
			r.Hash, _ = hashOf(r)
			raw, _ := json.Marshal(r)
			raws = append(raws, raw)
			_ = audit.Put(seqKey(r.Seq), raw)
			head = auditHead{Seq: r.Seq, Hash: r.Hash}
		}
		h, _ := json.Marshal(head)
		return meta.Put(keyAuditHead, h)
	})
	_ = db.Close()
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(ctx, Record{Time: t0.Add(time.Minute), Kind: "outcome", Principal: "p"}); err != nil {
		t.Fatal(err)
	}
	if n := verify(t, s); n != 6 {
		t.Fatalf("%d records after the move, want 6", n)
	}
	i := 0
	_ = s.View(ctx, func(tx *Tx) error {
		return tx.Records(0, func(_ Record, raw []byte) error {
			if i < len(raws) && string(raw) != string(raws[i]) {
				t.Errorf("record %d changed in the move:\n%s\n%s", i+1, raw, raws[i])
			}
			i++
			return nil
		})
	})
	s.Close()
	// Opening again moves nothing twice.
	s2, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if n := verify(t, s2); n != 6 {
		t.Fatalf("%d records after reopening, want 6", n)
	}
}

// TestAuditLogFilesArePrivate: the log's directory and files are the
// user's alone.
func TestAuditLogFilesArePrivate(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_ = s.Append(context.Background(), Record{Time: t0, Kind: "outcome", Principal: "p"})
	for path, want := range map[string]os.FileMode{filepath.Join(dir, AuditDir): 0o700, filepath.Join(dir, AuditDir, segmentName(1)): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", path, st.Mode().Perm(), want)
		}
	}
}

// TestGenerationMovesWithState: a commit of state raises the generation;
// reading, and appending records without a state change, do not.
func TestGenerationMovesWithState(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := Open(ctx, dir, Options{}) // another process on the directory
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	g0, _ := other.Generation(context.Background())
	_ = s.View(ctx, func(tx *Tx) error { _, err := tx.Block("p"); return err })
	_, _ = s.Commit(ctx, func(View) (Changes, error) {
		return Changes{Records: []Record{{Time: t0, Kind: "decision", Principal: "p"}}}, nil
	})
	_ = s.Append(ctx, Record{Time: t0, Kind: "outcome", Principal: "p"})
	if g, _ := other.Generation(context.Background()); g != g0 {
		t.Fatalf("generation moved from %d to %d without a state change", g0, g)
	}
	if err := s.Update(ctx, func(tx *Tx) error { return tx.PutBlock(Block{Principal: "p", BlockedAt: t0}) }); err != nil {
		t.Fatal(err)
	}
	if g, _ := other.Generation(context.Background()); g != g0+1 {
		t.Fatalf("generation %d after a block was set, want %d", g, g0+1)
	}
	verify(t, s)
}

// TestAnchorsCatchARewoundLog: an agent that cuts the log's tail and
// rewinds the head the database records passes VerifyChain, but not the
// anchors the system log kept.
func TestAnchorsCatchARewoundLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var mu sync.Mutex
	var syslog strings.Builder
	o := Options{SegmentBytes: 3000, Anchor: func(line string) error {
		mu.Lock()
		defer mu.Unlock()
		syslog.WriteString("Nov 22 19:00:00 host aqlguard-audit[42]: " + line + "\n")
		return nil
	}}
	s, err := Open(ctx, dir, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if err := s.Update(ctx, func(tx *Tx) error {
			return tx.Append(Record{Time: t0.Add(time.Duration(i) * time.Second), Kind: "decision", Principal: "p"})
		}); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Close()
	anchors, err := ParseAnchors(strings.NewReader(syslog.String()))
	if err != nil || len(anchors) < 2 {
		t.Fatalf("anchors %v, %v: want one per closed segment and one at close", anchors, err)
	}
	if last := anchors[len(anchors)-1]; last.Seq != 40 {
		t.Fatalf("the last anchor names record %d, want 40 (the head at close)", last.Seq)
	}
	s, err = Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.View(ctx, func(tx *Tx) error { _, err := tx.VerifyAnchors(anchors); return err }); err != nil {
		t.Fatalf("VerifyAnchors on the untouched log: %v", err)
	}

	// The attack: keep records 1–30, and make the database's head say 30.
	var keep []byte
	var head auditHead
	_ = s.View(ctx, func(tx *Tx) error {
		return tx.Records(0, func(r Record, raw []byte) error {
			if r.Seq <= 30 {
				keep = append(append(keep, raw...), '\n')
				head = auditHead{Seq: r.Seq, Hash: r.Hash}
			}
			return nil
		})
	})
	ns, _ := s.log.segments()
	for _, n := range ns {
		_ = os.Remove(filepath.Join(dir, AuditDir, segmentName(n)))
	}
	if err := os.WriteFile(filepath.Join(dir, AuditDir, segmentName(1)), keep, 0o600); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(head)
	_ = s.Update(ctx, func(tx *Tx) error { return tx.tx.Bucket(bucketMeta).Put(keyAuditHead, raw) })
	if n := verify(t, s); n != 30 {
		t.Fatalf("the rewound log verifies with %d records (the attack must look clean to VerifyChain)", n)
	}
	err = s.View(ctx, func(tx *Tx) error { _, err := tx.VerifyAnchors(anchors); return err })
	if !errors.Is(err, ErrChainBroken) {
		t.Fatalf("VerifyAnchors on the rewound log = %v, want ErrChainBroken", err)
	}
	// Anchors of another state directory do not count.
	other := []Anchor{{State: "0000000000000000", Segment: segmentName(1), Seq: 1, Hash: strings.Repeat("a", 64)}}
	if err := s.View(ctx, func(tx *Tx) error { _, err := tx.VerifyAnchors(other); return err }); err == nil || errors.Is(err, ErrChainBroken) {
		t.Fatalf("anchors of another directory: %v, want \"no anchor of this state directory\"", err)
	}
}
