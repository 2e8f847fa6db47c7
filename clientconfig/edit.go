package clientconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Result says what happened to one entry.
type Result struct {
	Entry  string // the entry's label
	Action string // wrapped, already wrapped, skipped, restored, refused, left alone
	Why    string
	// Diff is, for an entry edited since it was wrapped, what the edit
	// says (a unified diff of the entry as wrapped and as it is): what
	// unwrap --force drops.
	Diff string
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
			var next []byte
			if err == nil {
				next = Replace(out, e.Start, e.End, wrapped)
				err = checkWrapped(f, out, next, i, e, self)
			}
			if err != nil {
				r.Action, r.Why = "skipped", err.Error()
				break
			}
			recs.put(Record{File: f.Path, Entry: e.Key(), Client: f.Client, Original: string(out[e.Start:e.End]),
				WrappedSHA256: digest(wrapped), WrappedAt: now.UTC()})
			out = next
			r.Action = "wrapped"
		}
		results[i] = r
	}
	return out, results, nil
}

// checkWrapped reads the edited file as the client will and checks that
// its i-th entry, e before, now runs self wrap with what e ran or named,
// and that every other entry reads as before: the edit of an entry laid
// out beyond what the editors know fails here, not in the client.
func checkWrapped(f File, before, after []byte, i int, e Entry, self string) error {
	fail := func(why string) error {
		return errors.New("aqlguard could not edit this entry safely (" + why + "); edit it by hand")
	}
	was, err := Entries(f, before)
	if err != nil {
		return err
	}
	now, err := Entries(f, after)
	switch {
	case err != nil:
		return fail("the file would not parse: " + err.Error())
	case len(now) != len(was):
		return fail("the file would list another number of servers")
	}
	for j := range now {
		a, b := now[j], was[j]
		if j != i && (a.Key() != b.Key() || a.Command != b.Command || !slices.Equal(a.Args, b.Args) || a.URL != b.URL ||
			!maps.Equal(a.Env, b.Env) || !maps.Equal(a.Headers, b.Headers) || a.Unsupported != b.Unsupported) {
			return fail("the edit would change how the file reads elsewhere")
		}
	}
	w := now[i]
	if w.Start != e.Start || w.End != e.Start+(len(after)-len(before))+(e.End-e.Start) {
		// Unwrap puts the original back in place of what it reads as the
		// entry: that must be exactly what init wrote.
		return fail("the edited entry would not read back as one piece")
	}
	want := WrapArgs(e.Name, f.Client, e.Command, e.Args)
	if e.Remote {
		want = WrapRemoteArgs(e.Name, f.Client, e.URL, e.Headers)
	}
	switch {
	case w.Name != e.Name || w.Remote || w.Unsupported != "":
		return fail("the edited entry does not read as a server aqlguard starts")
	case w.Command != self || !slices.Equal(w.Args, want):
		return fail("the edited entry does not read back as written")
	}
	if e.Remote && len(e.Headers) > 0 {
		var h map[string]string
		if json.Unmarshal([]byte(w.Env[WrapHeadersEnv]), &h) != nil || !maps.Equal(h, e.Headers) {
			return fail("the headers do not read back as written")
		}
	}
	return nil
}

// Unwrap returns data with every entry wrapped by init restored from its
// record, byte for byte. An entry whose content changed since init (not
// its formatting: a client that rewrites its file changes no entry) is
// refused unless force, with a diff of the change either way. Restored
// entries leave recs.
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
		if !ok {
			r.Action = "left alone"
			if e.Wrapped("") {
				r.Why = "wrapped, but this state directory has no record of its original (wrapped with another --state-dir?)"
			}
			results[i] = r
			continue
		}
		diff, err := change(f, e, out[e.Start:e.End], rec)
		if err != nil {
			// What the entry says cannot be told: treat it as changed.
			diff = "(" + err.Error() + ")\n"
		}
		switch {
		case diff != "" && !force:
			r.Action, r.Diff = "refused", diff
			r.Why = fmt.Sprintf("edited since aqlguard wrapped it on %s (the change is below); "+
				"restore the original anyway, dropping the change, with --force", rec.WrappedAt.Format(time.RFC3339))
		default:
			out = Replace(out, e.Start, e.End, []byte(rec.Original))
			recs.remove(f.Path, e.Key())
			r.Action = "restored"
			if diff != "" {
				r.Diff, r.Why = diff, "--force: the change made since it was wrapped, below, is dropped"
			}
		}
		results[i] = r
	}
	return out, results, nil
}
