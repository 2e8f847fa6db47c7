package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/proxy/pins"
	"github.com/aqlguard/aqlguard/store"
)

const pinsUsage = `usage: aqlguard pins list [SERVER] [--state-dir DIR]
       aqlguard pins approve SERVER [TOOL] [--state-dir DIR]
       aqlguard pins reset SERVER [TOOL] | --every [--state-dir DIR]
`

// cmdPins is `aqlguard pins list|approve|reset`: the approved definitions
// of downstream tools, the changes waiting for a human, and forgetting
// pins (the next definition seen is trusted again).
func cmdPins(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "list" && args[0] != "approve" && args[0] != "reset") {
		fmt.Fprint(stderr, pinsUsage)
		return 2
	}
	verb := args[0]
	fs, g := newFlags("pins "+verb, stderr)
	every := fs.Bool("every", false, "reset: every pin of every server")
	rest, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return 2
	}
	how := writeState
	if verb == "list" {
		how = readState
	}
	st, code := storeFor(g, how, stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	ctx := context.Background()
	switch {
	case verb == "list" && len(rest) <= 1:
		server := ""
		if len(rest) == 1 {
			server = rest[0]
		}
		return pinsList(ctx, st, server, stdout, stderr)
	case verb == "approve" && len(rest) == 1:
		// A new server's first-sight review: every tool that waits for it.
		p := &pins.Pinner{State: st, Process: app.ProcessName()}
		n, err := p.ApproveReview(ctx, rest[0], nil, "admin "+osUser())
		if errors.Is(err, pins.ErrNoChange) {
			fmt.Fprintf(stderr, "aqlguard pins approve: no tool of %s waits for its first-sight review; name the tool to approve a change\n", rest[0])
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "aqlguard: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "approved %d tool(s) of the new server %s as they are; running aqlguards use them at the next call\n", n, rest[0])
		return 0
	case verb == "approve" && len(rest) == 2:
		p := &pins.Pinner{State: st, Process: app.ProcessName()}
		err := p.Approve(ctx, rest[0], rest[1], "", "admin "+osUser())
		if errors.Is(err, pins.ErrNoChange) {
			fmt.Fprintf(stderr, "aqlguard pins approve: no change of %s.%s waits for approval\n", rest[0], rest[1])
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "aqlguard: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "approved the changed %s.%s; running aqlguards use it at the next call\n", rest[0], rest[1])
		return 0
	case verb == "reset" && (*every && len(rest) == 0 || !*every && (len(rest) == 1 || len(rest) == 2)):
		server, tool := "", ""
		if len(rest) > 0 {
			server = rest[0]
		}
		if len(rest) == 2 {
			tool = rest[1]
		}
		p := &pins.Pinner{State: st, Process: app.ProcessName()}
		n, err := p.Reset(ctx, server, tool, "admin "+osUser())
		if err != nil {
			fmt.Fprintf(stderr, "aqlguard: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "forgot %d pin(s); the next definition each server sends is pinned as it is\n", n)
		return 0
	}
	fmt.Fprint(stderr, pinsUsage)
	return 2
}

func pinsList(ctx context.Context, st store.State, server string, stdout, stderr io.Writer) int {
	var list []store.Pin
	if err := st.Load(ctx, func(v store.View) (err error) { list, err = v.Pins(server); return }); err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no tools pinned yet (a tool is pinned when aqlguard first sees it)")
		return 0
	}
	w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SERVER\tTOOL\tSTATUS\tAPPROVED\tBY\tHASH")
	for _, p := range list {
		status, approved, hash := "pinned", p.ApprovedAt.Local().Format(time.RFC3339), p.Hash
		switch {
		case p.Hash == "" && p.Pending != nil && p.Pending.Review: // a new server's tool
			status, approved, hash = "NEW, waiting for review", "-", "-"
		case p.Hash == "": // never approved: a tool the server added
			status, approved, hash = "ADDED, waiting for approval", "-", "-"
		case p.Pending != nil:
			status = "CHANGED, waiting for approval"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Server, p.Tool, status, approved, orDash(p.ApprovedBy), hash[:min(12, len(hash))])
	}
	_ = w.Flush()
	reviews := map[string]bool{}
	for _, p := range list {
		if p.Pending != nil && p.Pending.Review && !reviews[p.Server] {
			reviews[p.Server] = true
			fmt.Fprintf(stdout, "\n%s is a new server: its tools wait for a review (look at them with `aqlguard policy explain`);\n"+
				"approve them all with: aqlguard pins approve %s\n", p.Server, p.Server)
		}
	}
	for _, p := range list {
		if p.Pending != nil && p.Pending.Review {
			continue
		}
		if p.Pending != nil {
			what := "changed"
			if p.Hash == "" {
				what = "was added"
			}
			fmt.Fprintf(stdout, "\n%s.%s %s on %s:\n%s", p.Server, p.Tool, what, p.Pending.SeenAt.Local().Format(time.RFC3339),
				pins.Diff(p.Tool, p.Definition, p.Pending.Definition))
			fmt.Fprintf(stdout, "approve with: aqlguard pins approve %s %s\n", p.Server, p.Tool)
		}
	}
	return 0
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
