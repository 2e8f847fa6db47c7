package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// RecordKind is what an audit record is about (Record.Kind). Every record
// is started by NewRecord with one of these.
type RecordKind string

// The kinds of audit records.
const (
	KindDecision     RecordKind = "decision"     // a guarded call or reported step, as decided
	KindOutcome      RecordKind = "outcome"      // what became of an allowed call
	KindChallenge    RecordKind = "challenge"    // whether a verification code could be shown
	KindVerification RecordKind = "verification" // an attempt at a code
	KindConfirmation RecordKind = "confirmation" // a human's answer to a question
	KindApproval     RecordKind = "approval"     // a standing approval ended
	KindExecution    RecordKind = "execution"    // an execution's lifecycle
	KindPolicy       RecordKind = "policy"       // the policy in force at a start or a reload
	KindPin          RecordKind = "pin"          // a tool definition pinned, changed, reset
	KindAdmin        RecordKind = "admin"        // an operator's command (unblock, revoke, reset, seal, import)
	KindRollback     RecordKind = "rollback"     // records before it whose state change did not commit
	KindCheckpoint   RecordKind = "checkpoint"   // a signed checkpoint of the chain (audit seal --key)
	KindSandbox      RecordKind = "sandbox"      // a stdio server started with its sandbox's grant, or refused something by it
)

// NewRecord starts an audit record: when, what kind, whose, from which
// process and session ("" for none). Every record aqlguard writes is
// made here; the caller fills in what the kind says.
func NewRecord(at time.Time, kind RecordKind, principal, process, session string) Record {
	return Record{Time: at, Kind: string(kind), Principal: principal, Process: process, Session: session}
}

// adminRecord is the record of an operator's command.
func adminRecord(at time.Time, principal, process, operation, decision, result string, factors ...string) Record {
	r := NewRecord(at, KindAdmin, principal, process, "")
	r.Operation, r.Decision, r.Result, r.Factors = operation, decision, result, factors
	return r
}

// Record is one audit log entry: a decision on a call, its outcome, a
// verification attempt, an execution's lifecycle or an admin action. Prev
// is the hash of the record before it and Hash is the SHA-256 of this
// record's JSON without Hash, so changing, removing or reordering any
// record breaks every hash after it.
//
// A Record never holds a verification code: only challenge ids.
type Record struct {
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"`
	Principal string    `json:"principal"`
	Session   string    `json:"session,omitempty"`
	// Client names the credential the session authenticated with on
	// `serve` (a [[serve.clients]] name, "serve-token", "oauth:…").
	Client    string `json:"client,omitempty"`
	Process   string `json:"process,omitempty"`
	Server    string `json:"server,omitempty"`
	Operation string `json:"operation,omitempty"`
	// Tool is the tool's own name, as its server spells it (decisions
	// on a server's tool).
	Tool       string `json:"tool,omitempty"`
	ArgsSHA256 string `json:"args_sha256,omitempty"`
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
	Approval string `json:"approval,omitempty"`
	Decision string `json:"decision,omitempty"`
	Stage    string `json:"stage,omitempty"`
	// Layer is the policy layer whose rule or setting decided, under a
	// managed policy ("managed" or "user").
	Layer       string   `json:"layer,omitempty"`
	Tier        string   `json:"tier,omitempty"`
	Risk        int      `json:"risk,omitempty"`
	Factors     []string `json:"factors,omitempty"`
	ChallengeID string   `json:"challenge_id,omitempty"`
	Token       string   `json:"token,omitempty"`
	Execution   string   `json:"execution,omitempty"`
	Result      string   `json:"result,omitempty"`
	DurationMS  float64  `json:"duration_ms,omitempty"`
	// Findings are what the call's result held that the guard acts on
	// (issue 30: secrets, instructions aimed at the assistant, what was
	// past the scan budget): each by kind, rule and place, never what
	// was found.
	Findings []Finding `json:"findings,omitempty"`
	// Gap is what an `audit seal` or a `state reset` record acknowledges:
	// a torn tail, or records missing from the chain.
	Gap *Gap `json:"gap,omitempty"`
	// Checkpoint is what a checkpoint record carries: a head of the
	// chain before it, signed with a key kept outside the state.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	Prev       string      `json:"prev"`
	Hash       string      `json:"hash,omitempty"`
}

// Finding is one thing a result held: Kind "secret" (Rule is the
// ruleset's id, Digest a keyed digest of the secret), "injection"
// (instructions aimed at the assistant; Rule the detector's),
// "unscanned" (past the scan budget), "withheld", "unwritable". Where
// is the place in the result ("content[0].text").
type Finding struct {
	Kind   string `json:"kind"`
	Rule   string `json:"rule,omitempty"`
	Where  string `json:"where,omitempty"`
	Digest string `json:"digest,omitempty"`
	Count  int    `json:"count,omitempty"`
}

// Gap is damage to the log that a human acknowledged, named exactly, so
// that verify accepts that damage and no other.
type Gap struct {
	// A torn tail: Segment ends, from byte Offset on, in Bytes bytes that
	// are no whole record (a write cut short), whose SHA-256 is Torn.
	Segment string `json:"segment,omitempty"`
	Offset  int64  `json:"offset,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"`
	Torn    string `json:"torn_sha256,omitempty"`
	// Missing records: the chain breaks after record AfterSeq (hash
	// AfterHash; 0 and the genesis hash at its start) and goes on at
	// record ResumeSeq, which links to ResumePrev.
	AfterSeq   uint64 `json:"after_seq,omitempty"`
	AfterHash  string `json:"after_hash,omitempty"`
	ResumeSeq  uint64 `json:"resume_seq,omitempty"`
	ResumePrev string `json:"resume_prev,omitempty"`
}

// Checkpoint is a signed head of the chain: record Seq has hash Hash,
// in state State, said at Time by the holder of the Ed25519 key Key
// (audit.KeyID) with signature Sig (base64) over audit.CheckpointMessage.
// A checkpoint record carries the head of some record before it, so the
// chain up to that record is as signed; a history rewritten below it no
// longer hashes to Hash, and no one without the key can sign another.
type Checkpoint struct {
	Seq   uint64    `json:"seq"`
	Hash  string    `json:"hash"`
	State string    `json:"state"`
	Time  time.Time `json:"time"`
	Key   string    `json:"key"`
	Sig   string    `json:"sig"`
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

// recordEncoder writes records as the log's lines. encode sets r.Hash
// and returns r's line, newline included, as json.Marshal writes the
// record: one encoding serves the hash and the line, since Hash is the
// last member and is left out while empty. Its buffers are kept for the
// next record (the writer encodes every record under the log's lock), so
// a line is valid until the next encode.
type recordEncoder struct {
	buf  bytes.Buffer
	enc  *json.Encoder
	fast []byte // appendRecordJSON's output
	line []byte
}

func (e *recordEncoder) encode(r *Record) ([]byte, error) {
	r.Hash = ""
	validUTF8(r)
	raw, ok := appendRecordJSON(e.fast[:0], r, &e.buf)
	if ok {
		if cap(raw) <= maxKeptLine {
			e.fast = raw
		}
	} else {
		if e.enc == nil {
			e.enc = json.NewEncoder(&e.buf) // as json.Marshal: HTML escaped, then a newline
		}
		e.buf.Reset()
		if err := e.enc.Encode(r); err != nil {
			return nil, err
		}
		raw = bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))
	}
	sum := sha256.Sum256(raw)
	var hash [2 * sha256.Size]byte // (hex.EncodeToString allocates twice)
	hex.Encode(hash[:], sum[:])
	r.Hash = string(hash[:])
	line := append(e.line[:0], raw[:len(raw)-1]...) // without its closing brace
	line = append(line, `,"hash":"`...)
	line = append(line, r.Hash...)
	line = append(line, "\"}\n"...)
	if cap(line) <= maxKeptLine {
		e.line = line
	}
	return line, nil
}

// validUTF8 replaces every byte of r's strings that is not UTF-8 with
// U+FFFD, as a reader's decoder will: encoding/json writes such a byte
// as the escape \ufffd but the decoded U+FFFD as itself, so a record
// hashed with one would not verify against its re-encoding (a false
// alarm of tampering). What a record carries comes from servers, the
// OS and the model; none of it is trusted to be UTF-8.
func validUTF8(r *Record) {
	for _, f := range []*string{&r.Kind, &r.Principal, &r.Session, &r.Process, &r.Server, &r.Operation, &r.Tool,
		&r.ArgsSHA256, &r.ArgsText, &r.Preview, &r.Approval, &r.Decision, &r.Stage, &r.Layer, &r.Tier, &r.ChallengeID,
		&r.Token, &r.Execution, &r.Result, &r.Prev} {
		if !utf8.ValidString(*f) {
			*f = strings.ToValidUTF8(*f, "\uFFFD")
		}
	}
	for i, f := range r.Factors {
		if !utf8.ValidString(f) {
			r.Factors = slices.Clone(r.Factors) // not the caller's
			for j := i; j < len(r.Factors); j++ {
				r.Factors[j] = strings.ToValidUTF8(r.Factors[j], "\uFFFD")
			}
			break
		}
	}
	if len(r.Args) > 0 && !utf8.Valid(r.Args) {
		r.Args = bytes.ToValidUTF8(r.Args, []byte("\uFFFD"))
	}
	if r.Gap != nil && !utf8.ValidString(r.Gap.Segment) {
		g := *r.Gap
		g.Segment = strings.ToValidUTF8(g.Segment, "\uFFFD")
		r.Gap = &g
	}
}

// maxKeptLine bounds the line buffer kept between records.
const maxKeptLine = 64 << 10

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// Append adds r to the end of the chain when the transaction's function
// returns without error: it is written to the audit log, with its Seq,
// Prev and Hash, just before the state changes commit.
func (t *Tx) Append(r Record) error {
	t.pending = append(t.pending, r)
	return nil
}

// putHead records the chain's head in the database, in the transaction
// that wrote records: a log cut below it no longer verifies.
func (t *Tx) putHead() error {
	meta, err := t.bucket(bucketMeta)
	if err != nil {
		return err
	}
	t.s.log.mu.Lock()
	head := t.s.log.head
	t.s.log.mu.Unlock()
	raw, _ := json.Marshal(head)
	if err := meta.Put(keyAuditHead, raw); err != nil {
		return fmt.Errorf("audit log: writing the chain head: %w", err)
	}
	return nil
}

// Append writes one record on its own: no database transaction, one
// write under the state directory's lock, then the fsync SyncMode says,
// with no lock held.
func (s *Store) Append(ctx context.Context, r Record) error {
	if s == nil {
		return errors.New("no state database is configured")
	}
	if _, err := s.acquire(ctx, false, "audit log"); err != nil {
		return err
	}
	pos, err := s.log.append([]Record{r}, nil)
	s.release()
	if err != nil {
		return err
	}
	return s.log.waitDurable(pos)
}

// Records calls fn with every record from seq from on, in order, as
// stored (raw is the record's exact JSON). fn must not keep raw.
func (t *Tx) Records(from uint64, fn func(r Record, raw []byte) error) error {
	return t.s.log.records(from, fn)
}

// migrateAudit moves the records of a database from before the log had
// files of its own into the first segment, byte for byte, once.
func (t *Tx) migrateAudit() error {
	audit, err := t.bucket(bucketAudit)
	if err != nil {
		return err
	}
	if k, _ := audit.Cursor().First(); k == nil {
		return nil
	}
	ns, err := t.s.log.segments()
	if err != nil {
		return err
	}
	if len(ns) > 0 {
		return fmt.Errorf("audit log: the database still holds records and %s has segments; move one of them away", t.s.log.dir)
	}
	path := filepath.Join(t.s.log.dir, segmentName(1))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	w := bufio.NewWriter(f)
	err = audit.ForEach(func(_, v []byte) error {
		if _, err := w.Write(v); err != nil {
			return err
		}
		return w.WriteByte('\n')
	})
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(t.s.log.dir)
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("audit log: moving the records out of the database: %w", err)
	}
	// The segment is durable: the database's copies can go.
	return t.tx.DeleteBucket(bucketAudit)
}

// ErrChainBroken says the audit log does not verify: a record was
// changed, removed or added, or records are missing.
var ErrChainBroken = errors.New("audit chain broken")

// ErrTornTail says a segment ends in a torn record: a write cut short by
// a crash, a power loss or a full disk. No record was changed; the bytes
// of the one being written are not a whole record. `aqlguard audit seal`
// records them as evidence, and verify passes again.
var ErrTornTail = errors.New("audit log ends in a torn record")

// ChainVerifier checks records one after the other, as stored or as
// exported (one JSON record per line). A record that does not verify
// (changed, or holding data its hash does not cover) fails at once. A
// break in the chain (records missing) or a torn tail fails at Finish,
// unless a later seal or reset record acknowledges exactly that gap.
type ChainVerifier struct {
	prev   string
	seq    uint64
	count  uint64
	breaks []Gap // found, in order
	torn   []Gap
	acks   []Gap // acknowledged by records
}

// NewChainVerifier starts at the beginning of the chain.
func NewChainVerifier() *ChainVerifier { return &ChainVerifier{prev: GenesisHash} }

// Next checks the next record's JSON: its own hash, that the JSON
// re-encodes to exactly the bytes given (so nothing can hide in fields
// the hash does not cover), and its link to the record before.
func (v *ChainVerifier) Next(raw []byte) (Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%w: record after %d does not decode: %v", ErrChainBroken, v.seq, err)
	}
	want, err := hashOf(r)
	if err != nil {
		return r, fmt.Errorf("%w at record %d: %v", ErrChainBroken, r.Seq, err)
	}
	if want != r.Hash {
		return r, fmt.Errorf("%w at record %d: its content does not match its hash (the record was changed)", ErrChainBroken, r.Seq)
	}
	again, err := json.Marshal(r)
	if err != nil || !bytes.Equal(again, bytes.TrimSpace(raw)) {
		return r, fmt.Errorf("%w at record %d: it holds data its hash does not cover", ErrChainBroken, r.Seq)
	}
	if r.Seq <= v.seq && v.count > 0 {
		return r, fmt.Errorf("%w: record %d follows record %d", ErrChainBroken, r.Seq, v.seq)
	}
	if r.Seq != v.seq+1 || r.Prev != v.prev {
		if r.Seq == v.seq+1 {
			// Not a gap: a record in its place that links elsewhere.
			return r, fmt.Errorf("%w at record %d: it does not link to record %d", ErrChainBroken, r.Seq, v.seq)
		}
		v.breaks = append(v.breaks, Gap{AfterSeq: v.seq, AfterHash: v.prev, ResumeSeq: r.Seq, ResumePrev: r.Prev})
	}
	if r.Gap != nil && r.Kind == "admin" && (r.Decision == DecisionSeal || r.Decision == DecisionReset) {
		v.acks = append(v.acks, *r.Gap)
	}
	v.prev, v.seq = r.Hash, r.Seq
	v.count++
	return r, nil
}

// Torn notes a torn tail found in a segment, for Finish to check against
// the seal records.
func (v *ChainVerifier) Torn(g Gap) { v.torn = append(v.torn, g) }

// Finish reports the gaps no record acknowledges: missing records
// (ErrChainBroken) first, then torn tails (ErrTornTail).
func (v *ChainVerifier) Finish() error {
	for _, b := range v.breaks {
		if !slices.Contains(v.acks, b) {
			return fmt.Errorf("%w: records %d to %d are missing (the chain breaks after record %d); "+
				"if they are lost for good, `aqlguard state reset --i-understand` records the gap", ErrChainBroken, b.AfterSeq+1, b.ResumeSeq-1, b.AfterSeq)
		}
	}
	for _, t := range v.torn {
		if !slices.Contains(v.acks, t) {
			return fmt.Errorf("%w: %s ends in %d bytes that are no whole record (from byte %d): a write cut short by a crash, "+
				"a power loss or a full disk, not a changed record; `aqlguard audit seal` records them as evidence and verify passes again",
				ErrTornTail, t.Segment, t.Bytes, t.Offset)
		}
	}
	return nil
}

// Acknowledged lists the gaps that seal and reset records acknowledged
// and that were found.
func (v *ChainVerifier) Acknowledged() []Gap {
	var out []Gap
	for _, g := range append(slices.Clone(v.breaks), v.torn...) {
		if slices.Contains(v.acks, g) {
			out = append(out, g)
		}
	}
	return out
}

// Count is how many records verified so far.
func (v *ChainVerifier) Count() uint64 { return v.count }

// Last is the last record's sequence number.
func (v *ChainVerifier) Last() uint64 { return v.seq }

// The decisions of the admin records that acknowledge gaps.
const (
	DecisionSeal  = "seal"
	DecisionReset = "state_reset"
)

// VerifyChain checks the whole chain, across every segment, and that the
// head the database last recorded is in it (so a log cut below that point
// is caught). Records after the head — appended without a database
// transaction, such as call outcomes — are covered by the chain alone.
// Gaps that seal and reset records acknowledge pass (see
// ChainVerifier); v says which. It returns the number of records.
func (t *Tx) VerifyChain() (uint64, error) {
	v, err := t.VerifyChainDetail()
	return v.Count(), err
}

// VerifyChainDetail is VerifyChain, returning the verifier, which knows
// the acknowledged gaps.
func (t *Tx) VerifyChainDetail() (*ChainVerifier, error) {
	v := NewChainVerifier()
	head, err := t.dbHead()
	if err != nil {
		return v, err
	}
	headSeen := head.Seq == 0
	if err := t.s.log.walk(0, func(r Record, raw []byte) error {
		if _, err := v.Next(raw); err != nil {
			return err
		}
		if r.Seq == head.Seq {
			if r.Hash != head.Hash {
				return fmt.Errorf("%w at record %d: it is not the record the database names as its head", ErrChainBroken, r.Seq)
			}
			headSeen = true
		}
		return nil
	}, v.Torn); err != nil {
		return v, err
	}
	if !headSeen {
		return v, fmt.Errorf("%w: the database names record %d as the log's head; the log ends at record %d", ErrChainBroken, head.Seq, v.Last())
	}
	return v, v.Finish()
}

// dbHead is the chain's head as the database last recorded it.
func (t *Tx) dbHead() (auditHead, error) {
	meta, err := t.bucket(bucketMeta)
	if err != nil {
		return auditHead{}, err
	}
	head := auditHead{Hash: GenesisHash}
	if raw := meta.Get(keyAuditHead); raw != nil {
		if err := json.Unmarshal(raw, &head); err != nil {
			return head, fmt.Errorf("%w: the chain head the database records is damaged: %v", ErrChainBroken, err)
		}
	}
	return head, nil
}

// Chainer links records onto a chain after a head, as every backend
// appends them: the next sequence number, the previous record's hash as
// Prev, the time in UTC, and the hash over the record's JSON. Its lines
// are the bytes the chain's hashes cover, so a chain kept in a database
// verifies with the same ChainVerifier as the JSONL log.
type Chainer struct {
	head Head
	enc  recordEncoder
}

// NewChainer continues the chain after head (Seq 0: its start).
func NewChainer(head Head) *Chainer {
	if head.Seq == 0 {
		head.Hash = GenesisHash
	}
	return &Chainer{head: head}
}

// Next chains r (setting Seq, Prev, Time and Hash) and returns its line
// without a newline, valid until the next call.
func (c *Chainer) Next(r *Record) ([]byte, error) {
	r.Seq, r.Prev = c.head.Seq+1, c.head.Hash
	r.Time = r.Time.UTC()
	line, err := c.enc.encode(r)
	if err != nil {
		return nil, fmt.Errorf("audit log: encoding record %d: %w", r.Seq, err)
	}
	c.head = Head{Seq: r.Seq, Hash: r.Hash}
	return line[:len(line)-1], nil
}

// Head is the last record chained.
func (c *Chainer) Head() Head { return c.head }
