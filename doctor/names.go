package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/proxy"
	"github.com/aqlguard/aqlguard/proxy/names"
	"github.com/aqlguard/aqlguard/store"
)

// startedServer is a server doctor started and what it offers.
type startedServer struct {
	origin
	listing names.Listing
}

// clientNames are the servers one client sees side by side: those of
// one principal (the agent its aqlguard processes run as), started here
// or recorded in the state by the aqlguard processes of its client.
type clientNames struct {
	agent    string
	listings []names.Listing
	// entries are the servers' names as their configs write them (an
	// imitation is judged on what the human reads), recorded ones as
	// recorded.
	entries []string
	started map[string]bool
}

// nameChecks are two checks over every client's servers: the tool and
// prompt names two of them offer (names.Collisions), and the server
// names that pass for another's or a well-known server's
// (names.Imitations).
func nameChecks(ctx context.Context, in Input, started []startedServer) []Check {
	var order []string
	clients := map[string]*clientNames{}
	client := func(agent string) *clientNames {
		c, ok := clients[agent]
		if !ok {
			c = &clientNames{agent: agent, started: map[string]bool{}}
			clients[agent] = c
			order = append(order, agent)
		}
		return c
	}
	for _, s := range started {
		c := client(s.agent)
		if c.started[s.name] {
			continue // one server in two of the client's files
		}
		c.started[s.name] = true
		c.listings = append(c.listings, s.listing)
		c.entries = append(c.entries, s.entry)
	}
	var problem string
	if in.RecordedNames != nil {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		recorded, err := in.RecordedNames(ctx)
		cancel()
		if err != nil {
			problem = "the names aqlguard processes recorded could not be read: " + strings.Join(strings.Fields(err.Error()), " ")
		}
		now := in.Now
		if now.IsZero() {
			now = time.Now()
		}
		for _, n := range recorded {
			if now.Sub(n.SeenAt) >= proxy.RecordedWithin || len(in.Clients) > 0 && !slices.Contains(in.Clients, n.Principal) {
				continue // gone, or of a client not asked about (init's --agent is the client's id)
			}
			c := client(n.Principal)
			if c.started[n.Server] {
				continue // what it offers now, not what it offered then
			}
			c.listings = append(c.listings, names.Listing{Server: n.Server, Tools: n.Tools, Prompts: n.Prompts})
			c.entries = append(c.entries, n.Server)
		}
	}
	servers := 0
	var collisions, imitations []string
	for _, agent := range order {
		c := clients[agent]
		servers += len(c.listings)
		for _, x := range names.Collisions(c.listings) {
			collisions = append(collisions, "agent "+agent+": "+x.String())
		}
		for _, im := range names.Imitations(c.entries) {
			if line := "agent " + agent + ": " + im.String(); !slices.Contains(imitations, line) {
				imitations = append(imitations, line)
			}
		}
	}
	if servers == 0 && problem == "" {
		return []Check{{OK, "names", "no server started or recorded yet to compare"}}
	}
	nameCheck := Check{OK, "names", fmt.Sprintf("no tool or prompt name is offered by two servers of one client "+
		"(%d server(s) of %d agent(s), started here or recorded by aqlguard processes)", servers, len(order))}
	if len(collisions) > 0 {
		nameCheck = Check{Warn, "names", strings.Join(collisions, "; ") +
			"; the model may call one for the other, and one server may be passing for the other: remove the one you do not trust"}
	}
	if problem != "" {
		nameCheck.Level = Warn
		nameCheck.Detail += "; " + problem
	}
	serverCheck := Check{OK, "server names", "no server name passes for another's or a well-known server's"}
	if len(imitations) > 0 {
		serverCheck = Check{Warn, "server names", strings.Join(imitations, "; ") + "; check that each is the server you meant to install"}
	}
	return []Check{nameCheck, serverCheck}
}

// RecordedNames reads every principal's recorded server names from st.
func RecordedNames(ctx context.Context, st store.State) ([]store.ServerNames, error) {
	var out []store.ServerNames
	err := st.Load(ctx, func(v store.View) (err error) {
		out, err = v.ServerNames("")
		return err
	})
	return out, err
}
