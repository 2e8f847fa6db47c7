package store

import (
	"fmt"
)

// A failed fsync of the audit log is loud. The records this process
// wrote since the last good fsync are in the page cache, not known to
// be on disk: a power loss now would lose them although their calls
// were answered. The failure is logged (naming those records) and
// counted (SyncFailures, the aqlguard_audit_fsync_failures_total
// metric), and every append fails, so every call is refused, until an
// fsync of the log succeeds again (each append tries one first).
//
// A later fsync that succeeds does not prove the earlier records
// reached the disk: Linux reports a writeback error once and may drop
// the pages it could not write. The log line names the records at
// risk; after a power loss `aqlguard audit verify` says whether they
// are there.

// syncFailed notes a failed fsync of the log whose head was record seq
// when it began, and returns the error that says so. l.mu is held.
func (l *auditLog) syncFailed(err error, seq uint64) error {
	l.syncFailures.Add(1)
	first := l.durableSeq + 1
	if l.unsynced == nil {
		l.log.Error("audit log: fsync failed; calls are refused until an fsync succeeds",
			"dir", l.dir, "records_not_known_on_disk", fmt.Sprintf("%d to %d", first, seq), "err", err)
	}
	l.unsynced = fmt.Errorf("audit log: fsync of %s failed (records %d to %d are not known to be on disk): %w; "+
		"nothing more is written until an fsync succeeds", l.dir, first, seq, err)
	return l.unsynced
}

// synced notes a good fsync of everything up to byte upto, record seq.
// l.mu is held.
func (l *auditLog) synced(upto int64, seq uint64) {
	if upto > l.durable {
		l.durable = upto
	}
	if seq > l.durableSeq {
		l.durableSeq = seq
	}
	if l.unsynced != nil {
		l.log.Warn("audit log: fsync works again; calls are taken again", "dir", l.dir, "durable_through_record", l.durableSeq)
		l.unsynced = nil
	}
}

// syncAgain is nil when the last fsync succeeded, or when one succeeds
// now; else the failure that keeps appends refused. l.mu is held.
func (l *auditLog) syncAgain() error {
	if l.unsynced == nil {
		return nil
	}
	if l.f == nil {
		return l.unsynced
	}
	if err := l.syncFile(l.f); err != nil {
		return l.syncFailed(err, l.head.Seq)
	}
	l.synced(l.written, l.head.Seq)
	return nil
}

// SyncFailures counts the failed fsyncs of the audit log since Open.
func (s *Store) SyncFailures() uint64 { return s.log.syncFailures.Load() }
