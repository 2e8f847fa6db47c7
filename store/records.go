package store

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Block is a hard block of a principal. There is at most one per
// principal.
type Block struct {
	Principal      string    `json:"principal"`
	Reason         string    `json:"reason"`
	Operation      string    `json:"operation,omitempty"`
	VerificationID string    `json:"verification_id"`
	BlockedAt      time.Time `json:"blocked_at"`
	// Session is the MCP session whose call set the block.
	Session string `json:"session,omitempty"`
	// ChallengeExpiresAt is when the block's code stops working.
	ChallengeExpiresAt time.Time `json:"challenge_expires_at"`
}

// Challenge is a verification challenge as stored: the salted hash of its
// code, never the code.
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
	Tokens      float64
	At          time.Time
	Violations  int
	LockedUntil time.Time
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

// Confirmation is a confirmation token and what it is bound to.
type Confirmation struct {
	Token         string    `json:"token"`
	Kind          string    `json:"kind"`
	Principal     string    `json:"principal"`
	Server        string    `json:"server,omitempty"`
	Operation     string    `json:"operation"`
	Digest        string    `json:"digest,omitempty"`
	PolicyVersion string    `json:"policy_version"`
	Session       string    `json:"session,omitempty"`
	Action        string    `json:"action,omitempty"`
	Reason        string    `json:"reason,omitempty"`
	Tier          string    `json:"tier,omitempty"`
	Status        string    `json:"status"`
	CreatedAt     time.Time `json:"created_at"`
	ExpiresAt     time.Time `json:"expires_at"`
	DoneAt        time.Time `json:"done_at,omitzero"`
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
	return n, nil
}
