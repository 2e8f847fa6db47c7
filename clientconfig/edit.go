package clientconfig

import (
	"fmt"
	"time"
)

// Result says what happened to one entry.
type Result struct {
	Entry  string // the entry's label
	Action string // wrapped, already wrapped, skipped, restored, refused, left alone
	Why    string
}

// Wrap returns data with every server entry of f wrapped by self (the
// absolute path of the aqlguard binary): a local one runs behind aqlguard
// wrap, a remote one becomes an aqlguard wrap --url that connects to it.
// The originals go to recs. Entries already wrapped and entries of a
// shape it cannot edit are left alone and said so. Edits run from the end of
// the file backwards, so each entry's offsets stay valid.
func Wrap(f File, data []byte, self string, recs *Records, now time.Time) ([]byte, []Result, error) {
	entries, err := Entries(f, data)
	if err != nil {
		return nil, nil, err
	}
	out := data
	results := make([]Result, len(entries))
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		r := Result{Entry: e.Label()}
		switch {
		case e.Wrapped(self):
			r.Action = "already wrapped"
		case e.Unsupported != "":
			r.Action, r.Why = "skipped", e.Unsupported
		default:
			var wrapped []byte
			var err error
			if e.Remote {
				wrapped, err = WrapRemoteEntry(f, out, e, self, f.Client)
			} else {
				wrapped, err = WrapEntry(f, out, e, self, f.Client)
			}
			if err != nil {
				r.Action, r.Why = "skipped", err.Error()
				break
			}
			recs.put(Record{File: f.Path, Entry: e.Key(), Client: f.Client, Original: string(out[e.Start:e.End]),
				WrappedSHA256: digest(wrapped), WrappedAt: now.UTC()})
			out = Replace(out, e.Start, e.End, wrapped)
			r.Action = "wrapped"
		}
		results[i] = r
	}
	return out, results, nil
}

// Unwrap returns data with every entry wrapped by init restored from its
// record, byte for byte. An entry changed since init is refused unless
// force. Restored entries leave recs.
func Unwrap(f File, data []byte, recs *Records, force bool) ([]byte, []Result, error) {
	entries, err := Entries(f, data)
	if err != nil {
		return nil, nil, err
	}
	out := data
	results := make([]Result, len(entries))
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		r := Result{Entry: e.Label()}
		rec, ok := recs.Get(f.Path, e.Key())
		switch {
		case !ok && e.Wrapped(""):
			r.Action, r.Why = "left alone", "wrapped, but this state directory has no record of its original (wrapped with another --state-dir?)"
		case !ok:
			r.Action = "left alone"
		case digest(out[e.Start:e.End]) != rec.WrappedSHA256 && !force:
			r.Action = "refused"
			r.Why = fmt.Sprintf("changed since aqlguard wrapped it on %s; restore the original anyway with --force", rec.WrappedAt.Format(time.RFC3339))
		default:
			out = Replace(out, e.Start, e.End, []byte(rec.Original))
			recs.remove(f.Path, e.Key())
			r.Action = "restored"
		}
		results[i] = r
	}
	return out, results, nil
}
