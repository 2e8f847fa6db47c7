package store

import (
	"context"
	"errors"
	"time"
)

// The admin overrides are Commit functions over State, so that `aqlguard
// unblock` and `approvals revoke` do the same on a state directory and on
// a PostgreSQL state shared by replicas: the change and its admin record
// are one commit, in the one order every replica decides in.

// Unblock is the admin override of a hard block (spec 8.8.3): the block
// goes, its challenge is revoked with it (its code no longer verifies),
// and the override is audited with who ran it, in one commit. It returns
// the block it lifted, or nil when principal was not blocked.
func Unblock(ctx context.Context, st State, principal, by, process string, at time.Time) (*Block, error) {
	var lifted *Block
	_, err := st.Commit(ctx, func(v View) (Changes, error) {
		lifted = nil // decide may run again
		b, err := v.Block(principal)
		if err != nil || b == nil {
			return Changes{}, err
		}
		r := adminRecord(at, principal, process, "unblock", "unblock", "unblocked", "admin override by "+by+"; block was: "+b.Reason)
		r.ChallengeID = b.VerificationID
		c := Changes{Unblock: []string{principal}, Records: []Record{r}}
		if ch, err := v.Challenge(b.VerificationID); err != nil {
			return Changes{}, err
		} else if ch != nil {
			ch.Revoked = true
			c.Challenges = []Challenge{*ch}
		}
		lifted = b
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	return lifted, nil
}

// Unblock is Unblock on this store.
func (s *Store) Unblock(ctx context.Context, principal, by, process string, at time.Time) (*Block, error) {
	return Unblock(ctx, s, principal, by, process, at)
}

// RevokeApprovals revokes every active approval match selects, with one
// admin audit record each naming who did it, in one commit, and returns
// them.
func RevokeApprovals(ctx context.Context, st State, match func(Approval) bool, by string, now time.Time) ([]Approval, error) {
	var revoked []Approval
	_, err := st.Commit(ctx, func(v View) (Changes, error) {
		revoked = nil // decide may run again
		all, err := v.Approvals()
		if err != nil {
			return Changes{}, err
		}
		var c Changes
		for _, a := range all {
			if !a.Active(now) || !match(a) {
				continue
			}
			a.RevokedAt, a.RevokedBy = now, by
			c.Approvals = append(c.Approvals, a)
			r := adminRecord(now, a.Principal, "", a.Operation, "revoke_approval", "revoked",
				"approval of "+a.Server+"."+a.Tool+" for session "+a.Session+" revoked by "+by)
			r.Session, r.Server, r.Approval = a.Session, a.Server, a.ID
			c.Records = append(c.Records, r)
			revoked = append(revoked, a)
		}
		return c, nil
	})
	return revoked, err
}

// RevokeApprovals is RevokeApprovals on this store.
func (s *Store) RevokeApprovals(ctx context.Context, match func(Approval) bool, by string, now time.Time) ([]Approval, error) {
	return RevokeApprovals(ctx, s, match, by, now)
}

// EachRecord calls fn with every record of the chain r reads whose
// sequence number is at least from, in order, with its line as stored
// (valid until fn returns). A torn tail a crash left in a bbolt segment
// is not a record and is passed over, as `audit verify` reports it.
func EachRecord(r AuditReader, from uint64, fn func(rec Record, raw []byte) error) error {
	var pos LogPosition
	if from > 1 {
		var err error
		if pos, err = r.Find(from); err != nil {
			return err
		}
	}
	for {
		batch, err := r.Read(pos, 1024)
		if err != nil && !errors.Is(err, ErrTornSkipped) {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		for _, e := range batch {
			if e.Record.Seq < from {
				continue
			}
			if err := fn(e.Record, e.Raw); err != nil {
				return err
			}
		}
		pos = batch[len(batch)-1].Next
	}
}
