package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// CopySummary says what Copy moved.
type CopySummary struct {
	// Rows is how many state rows (blocks, challenges, confirmations,
	// approvals, executions, failure budgets, pins, server names) were
	// copied.
	Rows int
	// Records is how many audit records were copied, byte for byte: the
	// source's chain up to Head.
	Records uint64
	Head    Head
}

// DecisionImport is the decision of the admin record that ends a copy.
const DecisionImport = "state_import"

// Copy moves the state of from into to, which must be empty (no audit
// record, no block, approval or pin): every row as one consistent
// snapshot of from holds it, then from's audit chain up to that
// snapshot's head, appended to to's empty chain, where it takes the same
// sequence numbers and hashes (the chain's encoding is deterministic):
// each record is compared byte for byte with from's. Last, one admin
// record in to says where its history came from and who moved it. Both
// chains are verified, before and after. What from records after its
// snapshot is not copied: stop the aqlguard processes on it first.
func Copy(ctx context.Context, from, to State, by string, now time.Time) (CopySummary, error) {
	var sum CopySummary
	if from.StateID() == to.StateID() {
		return sum, errors.New("copying a state: the source and the target are the same state")
	}
	if err := to.Load(ctx, func(v View) error {
		head, err := v.AuditHead()
		if err != nil {
			return err
		}
		blocks, err := v.Blocks()
		if err != nil {
			return err
		}
		approvals, err := v.Approvals()
		if err != nil {
			return err
		}
		pins, err := v.Pins("")
		if err != nil {
			return err
		}
		if head.Seq > 0 || len(blocks) > 0 || len(approvals) > 0 || len(pins) > 0 {
			return fmt.Errorf("the target state %s is not empty (%d audit records, %d blocks, %d approvals, %d pins): "+
				"a copy goes into a new state only", to.StateID(), head.Seq, len(blocks), len(approvals), len(pins))
		}
		return nil
	}); err != nil {
		return sum, fmt.Errorf("copying a state: %w", err)
	}
	if _, err := from.VerifyChain(ctx); err != nil {
		return sum, fmt.Errorf("copying a state: the source's audit chain does not verify: %w", err)
	}
	head, err := from.Export(ctx, func(c Changes) error {
		sum.Rows += len(c.Blocks) + len(c.Challenges) + len(c.Confirmations) + len(c.Approvals) + len(c.Executions) +
			len(c.Failures) + len(c.Pins) + len(c.ServerNames)
		_, err := to.Commit(ctx, func(View) (Changes, error) { return c, nil })
		return err
	})
	if err != nil {
		return sum, fmt.Errorf("copying a state: the rows: %w", err)
	}
	sum.Head = head
	if err := copyChain(ctx, from, to, head, &sum); err != nil {
		return sum, fmt.Errorf("copying a state: the audit chain: %w", err)
	}
	done := adminRecord(now, "aqlguard", "", "state import", DecisionImport, "imported",
		fmt.Sprintf("copied by %s from state %s: %d rows and audit records 1 to %d "+
			"(record %d's hash %s), byte for byte", by, from.StateID(), sum.Rows, head.Seq, head.Seq, head.Hash))
	if _, err := to.Commit(ctx, func(View) (Changes, error) { return Changes{Records: []Record{done}}, nil }); err != nil {
		return sum, fmt.Errorf("copying a state: recording the copy: %w", err)
	}
	if _, err := to.VerifyChain(ctx); err != nil {
		return sum, fmt.Errorf("copying a state: the copied chain does not verify: %w", err)
	}
	return sum, nil
}

// copyChain appends from's records up to head to to's empty chain, a
// batch per commit, and compares each with its source byte for byte.
func copyChain(ctx context.Context, from, to State, head Head, sum *CopySummary) error {
	src, dst := from.AuditReader(), to.AuditReader()
	defer src.Close()
	defer dst.Close()
	var pos, dpos LogPosition
	for sum.Records < head.Seq {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch, err := src.Read(pos, ExportBatch)
		if err != nil && !errors.Is(err, ErrTornSkipped) {
			return err
		}
		if len(batch) == 0 {
			return fmt.Errorf("the source's chain ends at record %d; its state says %d", sum.Records, head.Seq)
		}
		var recs []Record
		var raws [][]byte
		for _, e := range batch {
			if e.Record.Seq > head.Seq {
				break
			}
			recs = append(recs, e.Record)
			raws = append(raws, bytes.Clone(e.Raw))
		}
		pos = batch[len(batch)-1].Next
		if len(recs) == 0 {
			break
		}
		if _, err := to.Commit(ctx, func(View) (Changes, error) { return Changes{Records: recs}, nil }); err != nil {
			return err
		}
		got, err := dst.Read(dpos, len(recs))
		if err != nil {
			return err
		}
		for i, e := range got {
			if !bytes.Equal(e.Raw, raws[i]) {
				return fmt.Errorf("record %d cannot be moved byte for byte (the source's chain has a gap that a state reset "+
					"accepted, or another process wrote to the target): it became record %d", recs[i].Seq, e.Record.Seq)
			}
		}
		if len(got) != len(recs) {
			return fmt.Errorf("the target holds %d of the %d records just copied", len(got), len(recs))
		}
		dpos = got[len(got)-1].Next
		sum.Records += uint64(len(recs))
	}
	return nil
}
