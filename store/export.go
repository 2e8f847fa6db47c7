package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// ExportBatch is how many rows an Export hands over at a time.
const ExportBatch = 500

// batcher collects rows into Changes of at most ExportBatch rows.
type batcher struct {
	c  Changes
	n  int
	fn func(Changes) error
}

func (b *batcher) add(put func(c *Changes)) error {
	put(&b.c)
	if b.n++; b.n >= ExportBatch {
		return b.flush()
	}
	return nil
}

func (b *batcher) flush() error {
	if b.n == 0 && b.c.PolicyVersion == "" {
		return nil
	}
	c := b.c
	b.c, b.n = Changes{}, 0
	return b.fn(c)
}

// Export calls fn with every row of the state directory's database, in
// one read transaction, and returns the audit log's head as it stands
// under that transaction's lock (no process appends meanwhile).
func (s *Store) Export(ctx context.Context, fn func(Changes) error) (Head, error) {
	var head Head
	err := s.View(ctx, func(tx *Tx) error {
		b := &batcher{fn: fn}
		each := func(bucket []byte, put func(c *Changes, k, v []byte) error) error {
			bk, err := tx.bucket(bucket)
			if err != nil {
				return err
			}
			return bk.ForEach(func(k, v []byte) error {
				var perr error
				if err := b.add(func(c *Changes) { perr = put(c, k, v) }); err != nil {
					return err
				}
				if perr != nil {
					return fmt.Errorf("state database: %s/%q is damaged: %w", bucket, k, perr)
				}
				return nil
			})
		}
		err := each(bucketBlocks, func(c *Changes, _, v []byte) error { return decodeInto(v, &c.Blocks) })
		if err == nil {
			err = each(bucketChallenges, func(c *Changes, _, v []byte) error { return decodeInto(v, &c.Challenges) })
		}
		if err == nil {
			err = each(bucketConfirmations, func(c *Changes, _, v []byte) error { return decodeInto(v, &c.Confirmations) })
		}
		if err == nil {
			err = each(bucketApprovals, func(c *Changes, _, v []byte) error { return decodeInto(v, &c.Approvals) })
		}
		if err == nil {
			err = each(bucketExecutions, func(c *Changes, _, v []byte) error { return decodeInto(v, &c.Executions) })
		}
		if err == nil {
			err = each(bucketPins, func(c *Changes, _, v []byte) error { return decodeInto(v, &c.Pins) })
		}
		if err == nil && tx.tx.Bucket(bucketServerNames) != nil {
			err = each(bucketServerNames, func(c *Changes, _, v []byte) error { return decodeInto(v, &c.ServerNames) })
		}
		if err == nil {
			err = each(bucketFailures, func(c *Changes, k, v []byte) error {
				var f Failures
				if err := json.Unmarshal(v, &f); err != nil {
					return err
				}
				if c.Failures == nil {
					c.Failures = map[string]Failures{}
				}
				c.Failures[string(k)] = f
				return nil
			})
		}
		if err != nil {
			return err
		}
		pv, err := tx.PolicyVersion()
		if err != nil {
			return err
		}
		b.c.PolicyVersion = pv
		if err := b.flush(); err != nil {
			return err
		}
		head, err = tx.AuditHead()
		return err
	})
	return head, err
}

// decodeInto appends the JSON row raw to list.
func decodeInto[T any](raw []byte, list *[]T) error {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}
