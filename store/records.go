package store

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Block is a hard block of a principal. There is at most one per
// principal.
type Block struct {
	Principal string `json:"principal"`
	Reason    string `json:"reason"`
	Operation string `json:"operation,omitempty"`
	// Call is the call that set the block, as the human may see it (its
	// arguments redacted and cut as in a question).
	Call           string    `json:"call,omitempty"`
	VerificationID string    `json:"verification_id"`
	BlockedAt      time.Time `json:"blocked_at"`
	// Session is the MCP session whose call set the block.
	Session string `json:"session,omitempty"`
	// ChallengeExpiresAt is when the block's code stops working.
	ChallengeExpiresAt time.Time `json:"challenge_expires_at"`
	// CodeNotShown says the channel could not show the block's code (no
	// display, no channel): refusals then do not send the model to ask
	// the user for it.
	CodeNotShown bool `json:"code_not_shown,omitempty"`
}

// Challenge is a verification challenge as stored: the salted hash of its
// code, never the code. Action is a redacted preview of what it is for.
type Challenge struct {
	ID        string    `json:"id"`
	Principal string    `json:"principal"`
	Action    string    `json:"action"`
	Tier      string    `json:"tier"`
	Salt      []byte    `json:"salt"`
	Hash      []byte    `json:"hash"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Used      bool      `json:"used"`
	UsedAt    time.Time `json:"used_at,omitzero"`
	// Revoked is set when an admin lifted the block the challenge was for.
	Revoked bool `json:"revoked,omitempty"`
}

// Failures is a principal's verification failure state: a token bucket
// (tokens left at At) and the progressive lockout.
type Failures struct {
	Tokens      float64   `json:"tokens"`
	At          time.Time `json:"at"`
	Violations  int       `json:"violations"`
	LockedUntil time.Time `json:"locked_until,omitzero"`
}

// Execution is one execute_agent run.
type Execution struct {
	ID          string    `json:"id"`
	Principal   string    `json:"principal"`
	ElementName string    `json:"element_name"`
	Session     string    `json:"session"`
	Status      string    `json:"status"`
	Steps       int       `json:"steps"`
	StartedAt   time.Time `json:"started_at,omitzero"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	Reason      string    `json:"reason,omitempty"`
}

// Approval is a human's standing "allow this tool for this session": the
// principal's calls of one tool of one server, in one MCP session, under
// one policy version, until it expires or is revoked. Decisions that rest
// on a call's arguments are never covered by it.
type Approval struct {
	ID            string `json:"id"`
	Principal     string `json:"principal"`
	Session       string `json:"session"`
	Server        string `json:"server"`
	Tool          string `json:"tool"`
	Operation     string `json:"operation"`
	PolicyVersion string `json:"policy_version"`
	// Token is the confirmation whose answer granted it.
	Token     string    `json:"token,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	RevokedBy string    `json:"revoked_by,omitempty"`
	// EndedAt is when its MCP session ended: no call can use it after.
	EndedAt time.Time `json:"ended_at,omitzero"`
	// Process is the aqlguard process (host/pid) whose session it is, so
	// that one which ended without saying so (killed) can be told.
	Process string `json:"process,omitempty"`
}

// Active reports whether the approval still stands at now.
func (a Approval) Active(now time.Time) bool {
	return a.RevokedAt.IsZero() && a.EndedAt.IsZero() && now.Before(a.ExpiresAt)
}

// Approval returns an approval by id, or nil.
func (t *Tx) Approval(id string) (*Approval, error) { return get[Approval](t, bucketApprovals, id) }

// PutApproval writes an approval.
func (t *Tx) PutApproval(a Approval) error { return put(t, bucketApprovals, a.ID, a) }

// Approvals lists every approval, oldest first.
func (t *Tx) Approvals() ([]Approval, error) {
	b, err := t.bucket(bucketApprovals)
	if err != nil {
		return nil, err
	}
	var out []Approval
	err = b.ForEach(func(k, v []byte) error {
		var a Approval
		if err := json.Unmarshal(v, &a); err != nil {
			return fmt.Errorf("state database: approval %q is damaged: %w", k, err)
		}
		out = append(out, a)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, err
}

// Confirmations lists the confirmations of a principal with a status
// ("": any status). Pruning keeps the bucket short (an hour past expiry).
func (t *Tx) Confirmations(principal, status string) ([]Confirmation, error) {
	b, err := t.bucket(bucketConfirmations)
	if err != nil {
		return nil, err
	}
	var out []Confirmation
	err = b.ForEach(func(k, v []byte) error {
		var c Confirmation
		if err := json.Unmarshal(v, &c); err != nil {
			return fmt.Errorf("state database: confirmation %q is damaged: %w", k, err)
		}
		if c.Principal == principal && (status == "" || c.Status == status) {
			out = append(out, c)
		}
		return nil
	})
	return out, err
}

// Confirmation is a confirmation token and what it is bound to. Action is
// a redacted preview: secrets never reach the state database.
type Confirmation struct {
	Token        string `json:"token"`
	Kind         string `json:"kind"`
	Principal    string `json:"principal"`
	Server       string `json:"server,omitempty"`
	Tool         string `json:"tool,omitempty"`
	Operation    string `json:"operation"`
	Digest       string `json:"digest,omitempty"`
	AllowSession bool   `json:"allow_session,omitempty"`
	// Forget: the human is offered to clear what the session has read
	// (a question about where data goes).
	Forget bool `json:"forget,omitempty"`
	// Arguments are the call's arguments with every secret replaced by
	// its keyed digest, for the human's question in any process.
	Arguments     json.RawMessage `json:"arguments,omitempty"`
	PolicyVersion string          `json:"policy_version"`
	Session       string          `json:"session,omitempty"`
	Action        string          `json:"action,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	Tier          string          `json:"tier,omitempty"`
	// What the human's question says in words is made of these (the
	// question may be asked by another process): the client, the tool's
	// category, the deciding stage and rule, and the risk.
	Client   string `json:"client,omitempty"`
	Category string `json:"category,omitempty"`
	// Does is what the tool does in words, as the guard believes it
	// (its effect model: "writes a file (the filesystem profile)").
	Does      string    `json:"does,omitempty"`
	Stage     string    `json:"stage,omitempty"`
	Rule      string    `json:"rule,omitempty"`
	Risk      int       `json:"risk,omitempty"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	DoneAt    time.Time `json:"done_at,omitzero"`
	// UsedBy names the check that used it, so that a process can tell
	// its own use from another's.
	UsedBy string `json:"used_by,omitempty"`
}

func get[T any](t *Tx, bucket []byte, key string) (*T, error) {
	b, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	raw := b.Get([]byte(key))
	if raw == nil {
		return nil, nil
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("state database: %s/%q is damaged: %w", bucket, key, err)
	}
	return v, nil
}

func put(t *Tx, bucket []byte, key string, v any) error {
	b, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("state database: encoding %s/%q: %w", bucket, key, err)
	}
	if err := b.Put([]byte(key), raw); err != nil {
		return fmt.Errorf("state database: writing %s/%q: %w", bucket, key, err)
	}
	return nil
}

func del(t *Tx, bucket []byte, key string) error {
	b, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	if err := b.Delete([]byte(key)); err != nil {
		return fmt.Errorf("state database: deleting %s/%q: %w", bucket, key, err)
	}
	return nil
}

// Block returns the principal's block, or nil.
func (t *Tx) Block(principal string) (*Block, error) { return get[Block](t, bucketBlocks, principal) }

// PutBlock sets (or replaces) the block of b.Principal.
func (t *Tx) PutBlock(b Block) error { return put(t, bucketBlocks, b.Principal, b) }

// DeleteBlock lifts the principal's block.
func (t *Tx) DeleteBlock(principal string) error { return del(t, bucketBlocks, principal) }

// Blocks lists every block, by principal.
func (t *Tx) Blocks() ([]Block, error) {
	b, err := t.bucket(bucketBlocks)
	if err != nil {
		return nil, err
	}
	var out []Block
	err = b.ForEach(func(k, v []byte) error {
		var blk Block
		if err := json.Unmarshal(v, &blk); err != nil {
			return fmt.Errorf("state database: block %q is damaged: %w", k, err)
		}
		out = append(out, blk)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Principal < out[j].Principal })
	return out, err
}

// Challenge returns a challenge by id, or nil.
func (t *Tx) Challenge(id string) (*Challenge, error) {
	return get[Challenge](t, bucketChallenges, id)
}

// PutChallenge writes a challenge.
func (t *Tx) PutChallenge(c Challenge) error { return put(t, bucketChallenges, c.ID, c) }

type failuresJSON struct {
	Tokens      float64   `json:"tokens"`
	At          time.Time `json:"at"`
	Violations  int       `json:"violations"`
	LockedUntil time.Time `json:"locked_until,omitzero"`
}

// Failures returns the principal's verification failure state; ok is
// false when there is none yet.
func (t *Tx) Failures(principal string) (f Failures, ok bool, err error) {
	v, err := get[failuresJSON](t, bucketFailures, principal)
	if err != nil || v == nil {
		return Failures{}, false, err
	}
	return Failures(*v), true, nil
}

// PutFailures writes the principal's verification failure state.
func (t *Tx) PutFailures(principal string, f Failures) error {
	return put(t, bucketFailures, principal, failuresJSON(f))
}

// Execution returns an execution by id, or nil.
func (t *Tx) Execution(id string) (*Execution, error) {
	return get[Execution](t, bucketExecutions, id)
}

// PutExecution writes an execution.
func (t *Tx) PutExecution(e Execution) error { return put(t, bucketExecutions, e.ID, e) }

// Confirmation returns a confirmation by token, or nil.
func (t *Tx) Confirmation(token string) (*Confirmation, error) {
	return get[Confirmation](t, bucketConfirmations, token)
}

// PutConfirmation writes a confirmation.
func (t *Tx) PutConfirmation(c Confirmation) error {
	return put(t, bucketConfirmations, c.Token, c)
}

// Prune deletes challenges and confirmations that expired before cutoff,
// and executions that finished before it: what can no longer be used or
// replayed. Blocks, failure state and the audit log are never pruned.
func (t *Tx) Prune(cutoff time.Time) (int, error) {
	n := 0
	sweep := func(bucket []byte, old func(raw []byte) bool) error {
		b, err := t.bucket(bucket)
		if err != nil {
			return err
		}
		var doomed [][]byte
		if err := b.ForEach(func(k, v []byte) error {
			if old(v) {
				doomed = append(doomed, append([]byte(nil), k...))
			}
			return nil
		}); err != nil {
			return err
		}
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n += len(doomed)
		return nil
	}
	expired := func(raw []byte) bool {
		var v struct {
			ExpiresAt time.Time `json:"expires_at"`
		}
		return json.Unmarshal(raw, &v) == nil && v.ExpiresAt.Before(cutoff)
	}
	finished := func(raw []byte) bool {
		var v Execution
		return json.Unmarshal(raw, &v) == nil && !v.FinishedAt.IsZero() && v.FinishedAt.Before(cutoff)
	}
	if err := sweep(bucketChallenges, expired); err != nil {
		return n, fmt.Errorf("pruning challenges: %w", err)
	}
	if err := sweep(bucketConfirmations, expired); err != nil {
		return n, fmt.Errorf("pruning confirmations: %w", err)
	}
	if err := sweep(bucketExecutions, finished); err != nil {
		return n, fmt.Errorf("pruning executions: %w", err)
	}
	if err := sweep(bucketApprovals, expired); err != nil {
		return n, fmt.Errorf("pruning approvals: %w", err)
	}
	return n, nil
}

var keyAuditKey = []byte("audit_key")

// auditKey returns the database's audit key, creating it (32 bytes from
// crypto/rand) the first time.
func (t *Tx) auditKey() ([]byte, error) {
	b, err := t.bucket(bucketMeta)
	if err != nil {
		return nil, err
	}
	if k := b.Get(keyAuditKey); len(k) == 32 {
		return append([]byte(nil), k...), nil
	}
	if !t.tx.Writable() {
		return nil, errors.New("state database: no audit key yet")
	}
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("making the audit key: %w", err)
	}
	if err := b.Put(keyAuditKey, k); err != nil {
		return nil, fmt.Errorf("state database: writing the audit key: %w", err)
	}
	return k, nil
}
