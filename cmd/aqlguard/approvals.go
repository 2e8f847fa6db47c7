package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/aqlguard/aqlguard/store"
)

const approvalsUsage = `usage: aqlguard approvals list [--all] [--state-dir DIR]
       aqlguard approvals revoke ID... | --every [--agent NAME] [--state-dir DIR]
`

// cmdApprovals is `aqlguard approvals list|revoke`: the standing "allow
// this tool for this session" answers a human gave.
func cmdApprovals(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "list" && args[0] != "revoke") {
		fmt.Fprint(stderr, approvalsUsage)
		return 2
	}
	verb := args[0]
	fs, g := newFlags("approvals "+verb, stderr)
	all := fs.Bool("all", false, "list: include expired and revoked approvals")
	every := fs.Bool("every", false, "revoke: every active approval (of --agent, if given)")
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
	now := time.Now()
	if verb == "list" {
		if len(rest) > 0 {
			fmt.Fprint(stderr, approvalsUsage)
			return 2
		}
		var list []store.Approval
		if err := st.Load(context.Background(), func(v store.View) (err error) { list, err = v.Approvals(); return }); err != nil {
			fmt.Fprintf(stderr, "aqlguard: %v\n", err)
			return 1
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tAGENT\tSESSION\tTOOL\tGRANTED\tSTATE")
		shown := 0
		for _, a := range list {
			state := "active until " + a.ExpiresAt.Local().Format(time.RFC3339)
			gone := false
			switch {
			case !a.RevokedAt.IsZero():
				state = "revoked " + a.RevokedAt.Local().Format(time.RFC3339) + " by " + a.RevokedBy
			case !a.EndedAt.IsZero():
				state = "ended with its session " + a.EndedAt.Local().Format(time.RFC3339)
			case !now.Before(a.ExpiresAt):
				state = "expired"
			case processGone(a.Process):
				// Killed: its session ended without a word, and no call
				// can use the approval any more.
				state, gone = "session ended (its aqlguard, "+a.Process+", is gone)", true
			}
			if !*all && (!a.Active(now) || gone) {
				continue
			}
			shown++
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s.%s\t%s\t%s\n", a.ID, a.Principal, a.Session, a.Server, a.Tool,
				a.CreatedAt.Local().Format(time.RFC3339), state)
		}
		if shown == 0 {
			fmt.Fprintln(stdout, "no standing approvals")
			return 0
		}
		if err := tw.Flush(); err != nil {
			return 1
		}
		return 0
	}
	if *every == (len(rest) > 0) {
		fmt.Fprint(stderr, approvalsUsage)
		return 2
	}
	ids := map[string]bool{}
	for _, id := range rest {
		ids[id] = true
	}
	revoked, err := store.RevokeApprovals(context.Background(), st, func(a store.Approval) bool {
		if *every {
			return g.agent == "" || a.Principal == g.agent
		}
		return ids[a.ID]
	}, osUser(), now)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: revoking approvals: %v\n", err)
		return 1
	}
	for _, a := range revoked {
		delete(ids, a.ID)
		fmt.Fprintf(stdout, "revoked %s (%s.%s for %s, session %s)\n", a.ID, a.Server, a.Tool, a.Principal, a.Session)
	}
	for id := range ids {
		fmt.Fprintf(stderr, "aqlguard: no active approval %s\n", id)
	}
	if len(ids) > 0 {
		return 1
	}
	if len(revoked) == 0 {
		fmt.Fprintln(stdout, "no active approvals to revoke")
	}
	return 0
}
