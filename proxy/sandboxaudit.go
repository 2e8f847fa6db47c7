package proxy

import (
	"context"
	"strconv"
	"time"

	"github.com/aqlguard/aqlguard/sandbox"
	"github.com/aqlguard/aqlguard/store"
)

// sandboxAudit records in the audit log each stdio server's start with
// the grant its sandbox confines it to (and what this machine does not
// enforce of it), and what its sandbox was seen to refuse it.
type sandboxAudit struct{ sh *Shared }

func (a sandboxAudit) Started(server string, g sandbox.Grant, e sandbox.Enforcement) {
	r := a.record(server)
	r.Operation = "server_start"
	switch {
	case g.Off:
		r.Decision, r.Result = "unconfined", `[servers.sandbox] mode = "off"`
	case !e.Confines():
		r.Decision, r.Result = "unconfined", e.String()
	default:
		r.Decision = "confined"
		r.Result = e.Mechanism
		if e.Mechanism == "Landlock" {
			r.Result += " ABI " + strconv.Itoa(e.Version)
		}
	}
	r.Factors = append([]string{"grant: " + g.Summary()}, g.Notes...)
	for _, m := range e.Missing {
		r.Factors = append(r.Factors, "not enforced: "+m)
	}
	a.write(r)
}

func (a sandboxAudit) Refused(ref sandbox.Refusal) {
	r := a.record(ref.Server)
	r.Operation, r.Decision, r.Result = "sandbox_refused", "refused", ref.String()
	r.Factors = []string{"to grant it: " + ref.Fix()}
	a.write(r)
}

func (a sandboxAudit) record(server string) store.Record {
	g := a.sh.Guard
	r := store.NewRecord(time.Now(), store.KindSandbox, g.CurrentPolicy().Principal, g.Process, "")
	r.Server = server
	return r
}

// write appends the record; one that cannot be written is said in the
// log (the server has started already, or was refused already: nothing
// waits on it).
func (a sandboxAudit) write(r store.Record) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := store.AppendRecords(ctx, a.sh.Guard.State, r); err != nil {
		a.sh.log().Error("a server's sandbox could not be recorded in the audit log", "server", r.Server, "operation", r.Operation, "err", err)
	}
}
