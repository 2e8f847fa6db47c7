package store

import (
	"context"
	"time"
)

// Unblock is the admin override of a hard block (spec 8.8.3): the block
// goes, its challenge is revoked with it (its code no longer verifies),
// and the override is audited with who ran it, in one transaction. It
// returns the block it lifted, or nil when principal was not blocked.
func (s *Store) Unblock(ctx context.Context, principal, by, process string, at time.Time) (*Block, error) {
	var lifted *Block
	err := s.Update(ctx, func(tx *Tx) error {
		lifted = nil
		b, err := tx.Block(principal)
		if err != nil || b == nil {
			return err
		}
		if err := tx.DeleteBlock(principal); err != nil {
			return err
		}
		if c, err := tx.Challenge(b.VerificationID); err != nil {
			return err
		} else if c != nil {
			c.Revoked = true
			if err := tx.PutChallenge(*c); err != nil {
				return err
			}
		}
		r := adminRecord(at, principal, process, "unblock", "unblock", "unblocked", "admin override by "+by+"; block was: "+b.Reason)
		r.ChallengeID = b.VerificationID
		if err := tx.Append(r); err != nil {
			return err
		}
		lifted = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return lifted, nil
}
