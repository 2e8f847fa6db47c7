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

// CopyOptions tune Copy.
type CopyOptions struct {
	// Resume finishes a copy into to that did not (to carries its
	// CopyMark): from must be the same state, at the same audit head as
	// when the copy began; the rows are written again (each write is the
	// row as the source holds it, so writing one twice is writing it
	// once) and the chain goes on after the last record to holds.
	Resume bool
	// AfterBatch, when set, is called after each batch of audit records
	// is committed into to, with how many to holds; an error stops the
	// copy there, as a kill would (tests).
	AfterBatch func(records uint64) error
}

// Copy moves the state of from into to, which must be empty (no audit
// record, no block, approval or pin): every row as one consistent
// snapshot of from holds it, then from's audit chain up to that
// snapshot's head, appended to to's empty chain, where it takes the same
// sequence numbers and hashes (the chain's encoding is deterministic):
// each record is compared byte for byte with from's. Last, one admin
// record in to says where its history came from and who moved it. Both
// chains are verified, before and after. What from records after its
// snapshot is not copied: stop the aqlguard processes on it first.
//
// From before its first row until after its last check, to carries a
// CopyMark, so that a copy stopped halfway (killed, failed) leaves a
// state every Open refuses as an incomplete copy; o.Resume finishes it.
func Copy(ctx context.Context, from, to State, by string, now time.Time, o CopyOptions) (CopySummary, error) {
	var sum CopySummary
	if from.StateID() == to.StateID() {
		return sum, errors.New("copying a state: the source and the target are the same state")
	}
	mark, err := to.CopyMark(ctx)
	if err != nil {
		return sum, fmt.Errorf("copying a state: %w", err)
	}
	var have Head // what to holds of the chain (a resumed copy)
	switch {
	case mark != nil && !o.Resume:
		return sum, fmt.Errorf("copying a state: the target state %s is an incomplete copy of state %s (%d audit records), "+
			"begun %s by %s and stopped before it finished: rerun with --resume to finish it (from the same source, stopped)",
			to.StateID(), mark.Source, mark.SourceHead.Seq, mark.Began.UTC().Format(time.RFC3339), mark.By)
	case mark == nil && o.Resume:
		return sum, fmt.Errorf("copying a state: --resume: the target state %s is no incomplete copy (it carries no copy mark)", to.StateID())
	case mark != nil:
		if mark.Source != from.StateID() {
			return sum, fmt.Errorf("copying a state: --resume: the target is an incomplete copy of state %s, not of this source %s",
				mark.Source, from.StateID())
		}
		if err := to.Load(ctx, func(v View) (err error) { have, err = v.AuditHead(); return err }); err != nil {
			return sum, fmt.Errorf("copying a state: --resume: %w", err)
		}
	default:
		if err := checkEmpty(ctx, to); err != nil {
			return sum, fmt.Errorf("copying a state: %w", err)
		}
	}
	if _, err := from.VerifyChain(ctx); err != nil {
		return sum, fmt.Errorf("copying a state: the source's audit chain does not verify: %w", err)
	}
	resume := mark != nil
	if !resume {
		// Before the first row, with the source's head as it is now
		// (the export's, if nothing writes meanwhile; if something
		// does, the mark takes the export's below).
		mark = &CopyMark{Source: from.StateID(), By: by, Began: now.UTC()}
		if err := from.Load(ctx, func(v View) (err error) { mark.SourceHead, err = v.AuditHead(); return err }); err != nil {
			return sum, fmt.Errorf("copying a state: %w", err)
		}
		if err := to.SetCopyMark(ctx, mark); err != nil {
			return sum, fmt.Errorf("copying a state: %w", err)
		}
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
	if !resume && head != mark.SourceHead {
		// The snapshot's head: what the copy moves, and what a resume
		// must find the source at.
		mark.SourceHead = head
		if err := to.SetCopyMark(ctx, mark); err != nil {
			return sum, fmt.Errorf("copying a state: %w", err)
		}
	} else if head != mark.SourceHead {
		return sum, fmt.Errorf("copying a state: --resume: the source moved since the copy began (audit record %d then, %d now): "+
			"stop the aqlguard processes on it, and copy into a new state", mark.SourceHead.Seq, head.Seq)
	}
	sum.Head = head
	if have.Seq > head.Seq+1 {
		return sum, fmt.Errorf("copying a state: --resume: the target holds %d audit records, more than the copy writes (%d): "+
			"something else wrote to it; copy into a new state", have.Seq, head.Seq+1)
	}
	if have.Seq > head.Seq {
		// Stopped after its own admin record: only the checks are left.
		sum.Records = head.Seq
		if head.Seq > 0 {
			src, dst := from.AuditReader(), to.AuditReader()
			_, _, err := resumeAt(src, dst, head.Seq)
			src.Close()
			dst.Close()
			if err != nil {
				return sum, fmt.Errorf("copying a state: the audit chain: %w", err)
			}
		}
	} else if err := copyChain(ctx, from, to, head, have.Seq, &sum, o.AfterBatch); err != nil {
		return sum, fmt.Errorf("copying a state: the audit chain: %w", err)
	}
	if have.Seq <= head.Seq {
		done := adminRecord(now, "aqlguard", "", "state import", DecisionImport, "imported",
			fmt.Sprintf("copied by %s from state %s: %d rows and audit records 1 to %d "+
				"(record %d's hash %s), byte for byte", by, from.StateID(), sum.Rows, head.Seq, head.Seq, head.Hash))
		if _, err := to.Commit(ctx, func(View) (Changes, error) { return Changes{Records: []Record{done}}, nil }); err != nil {
			return sum, fmt.Errorf("copying a state: recording the copy: %w", err)
		}
	}
	if _, err := to.VerifyChain(ctx); err != nil {
		return sum, fmt.Errorf("copying a state: the copied chain does not verify: %w", err)
	}
	if err := to.SetCopyMark(ctx, nil); err != nil {
		return sum, fmt.Errorf("copying a state: the copy is whole, but: %w", err)
	}
	return sum, nil
}

// checkEmpty refuses a target that holds anything.
func checkEmpty(ctx context.Context, to State) error {
	return to.Load(ctx, func(v View) error {
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
	})
}

// copyChain appends from's records up to head to to's chain, which
// holds its first have records already (a resumed copy: the last of them
// is compared with its source, which the chain's links make a comparison
// of all), a batch per commit, and compares each with its source byte
// for byte.
func copyChain(ctx context.Context, from, to State, head Head, have uint64, sum *CopySummary, after func(uint64) error) error {
	src, dst := from.AuditReader(), to.AuditReader()
	defer src.Close()
	defer dst.Close()
	var pos, dpos LogPosition
	if have > 0 {
		var err error
		if pos, dpos, err = resumeAt(src, dst, have); err != nil {
			return err
		}
		sum.Records = have
	}
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
		if after != nil {
			if err := after(sum.Records); err != nil {
				return err
			}
		}
	}
	return nil
}

// resumeAt compares record have of both chains byte for byte and returns
// the positions after it in each.
func resumeAt(src, dst AuditReader, have uint64) (LogPosition, LogPosition, error) {
	at := func(r AuditReader, which string) (LogEntry, error) {
		pos, err := r.Find(have)
		if err != nil {
			return LogEntry{}, fmt.Errorf("finding record %d in the %s: %w", have, which, err)
		}
		got, err := r.Read(pos, 1)
		if err != nil && !errors.Is(err, ErrTornSkipped) {
			return LogEntry{}, fmt.Errorf("reading record %d in the %s: %w", have, which, err)
		}
		if len(got) == 0 || got[0].Record.Seq != have {
			return LogEntry{}, fmt.Errorf("the %s has no record %d", which, have)
		}
		return got[0], nil
	}
	s, err := at(src, "source")
	if err != nil {
		return LogPosition{}, LogPosition{}, err
	}
	d, err := at(dst, "target")
	if err != nil {
		return LogPosition{}, LogPosition{}, err
	}
	if !bytes.Equal(s.Raw, d.Raw) {
		return LogPosition{}, LogPosition{}, fmt.Errorf("record %d of the target is not the source's: the target is no copy of it", have)
	}
	return s.Next, d.Next, nil
}
