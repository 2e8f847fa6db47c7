package verify

import (
	"errors"
	"fmt"
	"time"
)

// Sealed is what a challenge keeps to check a code later: the salt and
// the salted hash. It is how a challenge is persisted; it never holds the
// code.
type Sealed struct {
	Salt []byte
	Hash []byte
}

// Seal returns copies of the challenge's salt and hash, for the store.
func (c *Challenge) Seal() Sealed {
	return Sealed{Salt: append([]byte(nil), c.salt...), Hash: append([]byte(nil), c.hash...)}
}

// RestoreChallenge rebuilds a persisted challenge. A challenge without a
// proper salt and hash could never verify, so it is an error rather than
// a challenge nobody can pass.
func RestoreChallenge(id, agent, action, tier string, created, expires time.Time, used bool, s Sealed) (*Challenge, error) {
	if !ValidChallengeID(id) {
		return nil, fmt.Errorf("restoring challenge %q: not a challenge id", id)
	}
	if len(s.Salt) != 16 || len(s.Hash) != 32 {
		return nil, errors.New("restoring challenge " + id + ": salt or hash has the wrong length")
	}
	return &Challenge{ID: id, Agent: agent, Action: action, Tier: tier, CreatedAt: created, ExpiresAt: expires,
		Used: used, salt: append([]byte(nil), s.Salt...), hash: append([]byte(nil), s.Hash...)}, nil
}
