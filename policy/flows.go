package policy

import (
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/config"
)

// FlowPolicy is [flows] compiled: the shipped layer's lists, then the
// managed layer's, then the user's (each adds); the stricter setting of
// the managed and the user's file.
type FlowPolicy struct {
	Private, Untrusted, Exits []Pattern
	// Redact and Quarantine are secrets = "redact" and injected =
	// "quarantine".
	Redact, Quarantine bool
	ScanBytes          int
}

// FlowRole is what a tool is to the session's flows, by the policy's
// [flows] lists: a private source, an untrusted source, an exit.
type FlowRole struct {
	Private, Untrusted, Exit bool
	// Matched names the entries that said so, for `policy explain`.
	Matched []string
}

// FlowRoleOf is the role [flows] gives the call named n.
func (f *FlowPolicy) FlowRoleOf(n CallNames) FlowRole {
	var r FlowRole
	if f == nil {
		return r
	}
	find := func(list []Pattern, key string) bool {
		for _, p := range list {
			if p.MatchesName(n) {
				r.Matched = append(r.Matched, "flows."+key+" "+strconv.Quote(p.Source))
				return true
			}
		}
		return false
	}
	r.Private = find(f.Private, "private")
	r.Untrusted = find(f.Untrusted, "untrusted")
	r.Exit = find(f.Exits, "exits")
	return r
}

// Budget is the bytes of one result the scanners read.
func (f *FlowPolicy) Budget() int {
	if f == nil || f.ScanBytes <= 0 { // a Policy not built by Compile
		return config.DefaultFlowScanBytes
	}
	return f.ScanBytes
}

func (v *validator) flows(f *config.Flows) {
	v.enum("flows.secrets", &f.Secrets, []string{config.FlowSecretsMark, config.FlowSecretsRedact}, config.FlowSecretsMark)
	v.enum("flows.injected", &f.Injected, []string{config.FlowInjectedFlag, config.FlowInjectedQuarantine}, config.FlowInjectedFlag)
	switch {
	case f.ScanBytes == 0 && !v.present("flows.scan_bytes"):
		f.ScanBytes = config.DefaultFlowScanBytes
	case f.ScanBytes < 1024 || f.ScanBytes > config.MaxFlowScanBytes:
		v.errf("flows.scan_bytes", "%d is out of range: use 1024 to %d; default %d", f.ScanBytes, config.MaxFlowScanBytes, config.DefaultFlowScanBytes)
	}
	for key, list := range map[string][]string{"flows.private": f.Private, "flows.untrusted": f.Untrusted, "flows.exits": f.Exits} {
		for i, src := range list {
			p, err := CompilePattern(src)
			switch {
			case err != nil:
				v.errf(index(key, i), "%q: %v", src, err)
			case p.Kind&Names == 0:
				v.errf(index(key, i), "%q names no tool: write server.tool, server.* or a tool's name", src)
			}
		}
	}
}

// compileFlows merges the layers' [flows]: lists add up, in layer order;
// redact and quarantine hold when any layer asks for them (a user's file
// cannot loosen what the managed layer set).
func compileFlows(layers []layerInput) *FlowPolicy {
	f := &FlowPolicy{}
	seen := map[string]bool{}
	add := func(to []Pattern, key string, list []string, in *layerInput) []Pattern {
		for _, src := range list {
			p, err := CompilePattern(src)
			if err != nil || p.Kind&Names == 0 {
				continue // validated
			}
			p.forServers(in.servers)
			p.layer = in.layer
			if form := key + "\x00" + p.norm; !seen[form] {
				seen[form] = true
				to = append(to, p)
			}
		}
		return to
	}
	for i := range layers {
		in := &layers[i]
		fl := in.flows
		f.Private = add(f.Private, "private", fl.Private, in)
		f.Untrusted = add(f.Untrusted, "untrusted", fl.Untrusted, in)
		f.Exits = add(f.Exits, "exits", fl.Exits, in)
		f.Redact = f.Redact || fl.Secrets == config.FlowSecretsRedact
		f.Quarantine = f.Quarantine || fl.Injected == config.FlowInjectedQuarantine
		if in.layer != LayerShipped {
			f.ScanBytes = max(f.ScanBytes, fl.ScanBytes) // reading more is the stricter: a user's file cannot read less than the managed layer's
		}

	}
	return f
}

// digestForm is the flows as a policy's version sees them.
func (f *FlowPolicy) digestForm() string {
	if f == nil {
		return ""
	}
	var b strings.Builder
	for _, l := range [][]Pattern{f.Private, f.Untrusted, f.Exits} {
		for _, p := range l {
			b.WriteString(p.digestForm())
			b.WriteByte(0)
		}
		b.WriteByte(1)
	}
	b.WriteString(strconv.FormatBool(f.Redact) + strconv.FormatBool(f.Quarantine) + strconv.Itoa(f.ScanBytes))
	return b.String()
}
