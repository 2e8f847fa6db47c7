package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Record is one audit log entry: a decision on a call, its outcome, a
// verification attempt, an execution's lifecycle or an admin action. Prev
// is the hash of the record before it and Hash is the SHA-256 of this
// record's JSON without Hash, so changing, removing or reordering any
// record breaks every hash after it.
//
// A Record never holds a verification code: only challenge ids.
type Record struct {
	Seq        uint64    `json:"seq"`
	Time       time.Time `json:"time"`
	Kind       string    `json:"kind"`
	Principal  string    `json:"principal"`
	Session    string    `json:"session,omitempty"`
	Process    string    `json:"process,omitempty"`
	Server     string    `json:"server,omitempty"`
	Operation  string    `json:"operation,omitempty"`
	ArgsSHA256 string    `json:"args_sha256,omitempty"`
	// Args are the call's arguments as the server received them, each
	// secret replaced by a keyed digest, when they fit the configured cap;
	// otherwise ArgsText holds the first cap bytes of that JSON and
	// ArgsBytes its whole length. ArgsSHA256 covers the full, unredacted
	// arguments either way.
	Args      json.RawMessage `json:"args,omitempty"`
	ArgsText  string          `json:"args_text,omitempty"`
	ArgsBytes int             `json:"args_bytes,omitempty"`
	// Preview is what records written before Args existed carry.
	Preview string `json:"preview,omitempty"`
	// Approval names the standing approval a decision used or granted.
	Approval    string   `json:"approval,omitempty"`
	Decision    string   `json:"decision,omitempty"`
	Stage       string   `json:"stage,omitempty"`
	Tier        string   `json:"tier,omitempty"`
	Risk        int      `json:"risk,omitempty"`
	Factors     []string `json:"factors,omitempty"`
	ChallengeID string   `json:"challenge_id,omitempty"`
	Token       string   `json:"token,omitempty"`
	Execution   string   `json:"execution,omitempty"`
	Result      string   `json:"result,omitempty"`
	DurationMS  float64  `json:"duration_ms,omitempty"`
	Prev        string   `json:"prev"`
	Hash        string   `json:"hash,omitempty"`
}

// GenesisHash is the Prev of the first record.
var GenesisHash = hex.EncodeToString(make([]byte, sha256.Size))

var keyAuditHead = []byte("audit_head")

type auditHead struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// hashOf is the record's hash: SHA-256 over its JSON with Hash empty.
func hashOf(r Record) (string, error) {
	r.Hash = ""
	raw, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// Append adds r to the end of the chain and returns it with Seq, Prev and
// Hash set. The record is durable when the transaction commits.
func (t *Tx) Append(r Record) (Record, error) {
	audit, err := t.bucket(bucketAudit)
	if err != nil {
		return r, err
	}
	meta, err := t.bucket(bucketMeta)
	if err != nil {
		return r, err
	}
	head := auditHead{Hash: GenesisHash}
	if raw := meta.Get(keyAuditHead); raw != nil {
		if err := json.Unmarshal(raw, &head); err != nil {
			return r, fmt.Errorf("audit log: the chain head is damaged: %w", err)
		}
	}
	r.Seq, r.Prev = head.Seq+1, head.Hash
	r.Time = r.Time.UTC()
	if r.Hash, err = hashOf(r); err != nil {
		return r, fmt.Errorf("audit log: encoding record %d: %w", r.Seq, err)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return r, fmt.Errorf("audit log: encoding record %d: %w", r.Seq, err)
	}
	if err := audit.Put(seqKey(r.Seq), raw); err != nil {
		return r, fmt.Errorf("audit log: writing record %d: %w", r.Seq, err)
	}
	headRaw, _ := json.Marshal(auditHead{Seq: r.Seq, Hash: r.Hash})
	if err := meta.Put(keyAuditHead, headRaw); err != nil {
		return r, fmt.Errorf("audit log: writing the chain head: %w", err)
	}
	return r, nil
}

// Append writes one record in a transaction of its own.
func (s *Store) Append(ctx context.Context, r Record) error {
	return s.Update(ctx, func(tx *Tx) error { _, err := tx.Append(r); return err })
}

// Records calls fn with every record from seq from on, in order, as
// stored (raw is the record's exact JSON). fn must not keep raw.
func (t *Tx) Records(from uint64, fn func(r Record, raw []byte) error) error {
	audit, err := t.bucket(bucketAudit)
	if err != nil {
		return err
	}
	c := audit.Cursor()
	for k, v := c.Seek(seqKey(from)); k != nil; k, v = c.Next() {
		var r Record
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("audit log: record %d is damaged: %w", binary.BigEndian.Uint64(k), err)
		}
		if err := fn(r, v); err != nil {
			return err
		}
	}
	return nil
}

// ErrChainBroken says the audit log does not verify.
var ErrChainBroken = errors.New("audit chain broken")

// ChainVerifier checks records one after the other, as stored or as
// exported (one JSON record per line).
type ChainVerifier struct {
	prev string
	seq  uint64
}

// NewChainVerifier starts at the beginning of the chain.
func NewChainVerifier() *ChainVerifier { return &ChainVerifier{prev: GenesisHash} }

// Next checks the next record's JSON: sequence, link to the one before
// and its own hash. The JSON must re-encode to exactly the bytes given,
// so nothing can hide in fields the hash does not cover.
func (v *ChainVerifier) Next(raw []byte) (Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%w: record after %d does not decode: %v", ErrChainBroken, v.seq, err)
	}
	if r.Seq != v.seq+1 {
		return r, fmt.Errorf("%w: record %d follows record %d", ErrChainBroken, r.Seq, v.seq)
	}
	if r.Prev != v.prev {
		return r, fmt.Errorf("%w at record %d: it does not link to record %d", ErrChainBroken, r.Seq, v.seq)
	}
	want, err := hashOf(r)
	if err != nil {
		return r, fmt.Errorf("%w at record %d: %v", ErrChainBroken, r.Seq, err)
	}
	if want != r.Hash {
		return r, fmt.Errorf("%w at record %d: its content does not match its hash", ErrChainBroken, r.Seq)
	}
	again, err := json.Marshal(r)
	if err != nil || !bytes.Equal(again, bytes.TrimSpace(raw)) {
		return r, fmt.Errorf("%w at record %d: it holds data its hash does not cover", ErrChainBroken, r.Seq)
	}
	v.prev, v.seq = r.Hash, r.Seq
	return r, nil
}

// Count is how many records verified so far.
func (v *ChainVerifier) Count() uint64 { return v.seq }

// VerifyChain checks the whole stored chain and that its head matches the
// last record (so a truncated tail is caught too). It returns the number
// of records.
func (t *Tx) VerifyChain() (uint64, error) {
	v := NewChainVerifier()
	if err := t.Records(0, func(_ Record, raw []byte) error {
		_, err := v.Next(raw)
		return err
	}); err != nil {
		return v.Count(), err
	}
	meta, err := t.bucket(bucketMeta)
	if err != nil {
		return v.Count(), err
	}
	head := auditHead{Hash: GenesisHash}
	if raw := meta.Get(keyAuditHead); raw != nil {
		if err := json.Unmarshal(raw, &head); err != nil {
			return v.Count(), fmt.Errorf("%w: the chain head is damaged: %v", ErrChainBroken, err)
		}
	}
	if head.Seq != v.Count() || head.Hash != v.prev {
		return v.Count(), fmt.Errorf("%w: the head names record %d, the log ends at record %d", ErrChainBroken, head.Seq, v.Count())
	}
	return v.Count(), nil
}
