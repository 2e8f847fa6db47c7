package evaluator

import (
	"slices"
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/policy"
)

// A session that has read private data and untrusted content is one
// injected instruction away from sending the first out (the "lethal
// trifecta"): the guard keeps, per session, what of each it read (the
// caller fills Step.Flow), and a call that sends data out then asks a
// human, saying where both came from. A call that sends data out and
// carries a secret the session was handed in a result is refused: no
// honest call sends a credential it read back out through a tool. One
// whose tool may do anything (it runs commands, or nothing says what it
// does) asks instead; one that stays on the machine (an edit of the .env
// it read) runs.

// Flow is what the step's session has read that counts for where data
// may go, as the guard tracked it.
type Flow struct {
	// Private and Untrusted say what the session read, each in words
	// with where and when ("~/.ssh/id_rsa with filesystem.read_file at
	// 17:04"), oldest first.
	Private, Untrusted []string
	// Carried says, in words, which argument carries a secret the
	// session saw in a result, and how ("argument \"url\" carries the
	// github-pat secret read with filesystem.read_file at 17:04, base64
	// encoded"); "" when none does.
	Carried string
	// Remote says the call's server is reached over the network: all
	// it carries leaves the machine, whatever its tool does.
	Remote bool
}

// exit reports whether the call sends data out of the machine: its
// effects say send, or [flows] exits lists it (by the names the call
// was prepared with).
func (c *call) exit(p *policy.Policy) bool {
	if c.s.Effects.Has(policy.EffectSend) {
		return true
	}
	return p != nil && p.Flows.FlowRoleOf(c.sub.Names).Exit
}

// judgeFlow is stage 3's flow judgement: a carried secret refuses, an
// exit after private data and untrusted content asks. A session that
// read neither costs a call nothing here.
func (c *call) judgeFlow(p *policy.Policy) (match, bool) {
	f := &c.s.Flow
	if f.Carried == "" && (len(f.Private) == 0 || len(f.Untrusted) == 0) {
		return match{}, false
	}
	exit := c.exit(p)
	if f.Carried != "" {
		switch {
		case exit:
			return match{action: policy.ActionRefuse, source: "flow", display: "flow", subject: "the call", argumentBound: true,
				why: f.Carried + ", and it sends data " + c.destination() + ": a secret a tool handed this session does not leave through another"}, true
		case f.Remote:
			return match{action: policy.ActionRefuse, source: "flow", display: "flow", subject: "the call", argumentBound: true,
				why: f.Carried + ", and the " + c.s.Server + " server is reached over the network: a secret a tool handed this session does not leave through another"}, true
		case mayDoAnything(c.s):
			return match{action: policy.ActionRequiresApproval, source: "flow", display: "flow", subject: "the call", argumentBound: true,
				why: f.Carried + ", and nothing says the tool keeps it on this machine (" + c.s.Effects.String() + ")"}, true
		}
	}
	if len(f.Private) == 0 || len(f.Untrusted) == 0 || !exit {
		return match{}, false
	}
	return match{action: policy.ActionRequiresApproval, source: "flow", display: "flow", subject: "the call", argumentBound: true,
		why: "after reading private data (" + sayRead(f.Private) + ") and untrusted content (" + sayRead(f.Untrusted) +
			"), this call sends data " + c.destination()}, true
}

// mayDoAnything: the step's tool runs commands or code, or nothing says
// what it does.
func mayDoAnything(s Step) bool {
	return s.EffectSource == policy.SourceNone || s.EffectSource == policy.SourceUnknown ||
		s.Effects.Has(policy.EffectExecute) || s.Effects.Has(policy.EffectUnknown)
}

// sayRead is a list of what was read: the first three, and how many
// more.
func sayRead(list []string) string {
	if len(list) <= 3 {
		return strings.Join(list, "; ")
	}
	return strings.Join(list[:3], "; ") + "; and " + strconv.Itoa(len(list)-3) + " more"
}

// destination says where the call sends data: the hosts of its URL
// arguments, else its server.
func (c *call) destination() string {
	var hosts []string
	for i := range c.sub.Values {
		v := &c.sub.Values[i]
		if v.Role != policy.RoleURL || !v.String || v.Key {
			continue
		}
		if h := urlHost(v.Raw); h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) > 0 {
		return "to " + strings.Join(hosts, ", ")
	}
	return "out through the " + c.s.Server + " server's " + c.s.Tool
}
