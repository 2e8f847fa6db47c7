package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
)

// serverSet is servers judged under one principal, as they run: the
// config's own [[servers]] under its agent, or the servers the client
// configs run behind `aqlguard wrap` (what init wrote) under each entry's
// --agent, with the config's policy (wrap guards one server on it).
type serverSet struct {
	from  string         // where they are configured, for people
	cfg   *config.Config // the config with these servers
	agent string
}

// serverSets are the sets policy explain and policy check --servers
// connect to. Wrapped servers of one principal share a set while their
// names differ; the same server wrapped in two clients (same name,
// command and environment) is connected once. remote lists the wrapped
// remote servers, which are not connected (one may ask for OAuth consent
// in a browser): their tools are judged when a client starts them.
func serverSets(cfg *config.Config, env clientconfig.Env) (sets []serverSet, remote []string) {
	if len(cfg.Servers) > 0 {
		sets = append(sets, serverSet{from: source(cfg), cfg: cfg, agent: cfg.Agent})
	}
	self, _ := selfPath()
	type wrappedSet struct {
		agent   string
		servers []config.Server
		from    []string
	}
	var wrapped []*wrappedSet
	for _, g := range clientconfig.GuardedServers(env, self) {
		label := g.File.Client + " " + g.Entry.Label()
		if g.URL != "" {
			remote = append(remote, label+" ("+g.URL+")")
			continue
		}
		agent := g.Agent
		if agent == "" {
			agent = cfg.Agent
		}
		srv := config.Server{Name: policy.ServerNameFrom(g.Name), Command: g.Argv[0], Args: slices.Clone(g.Argv[1:]),
			Env: g.Entry.Env, Transport: "stdio"}
		var home *wrappedSet
	find:
		for _, w := range wrapped {
			if w.agent != agent {
				continue
			}
			for _, s := range w.servers {
				if s.Name != srv.Name {
					continue
				}
				if s.Command == srv.Command && slices.Equal(s.Args, srv.Args) && maps.Equal(s.Env, srv.Env) {
					w.from = append(w.from, label) // the same server, wrapped again
					home = w
					break find
				}
				continue find // another server of that name: another set
			}
			w.servers = append(w.servers, srv)
			w.from = append(w.from, label)
			home = w
			break
		}
		if home == nil {
			wrapped = append(wrapped, &wrappedSet{agent: agent, servers: []config.Server{srv}, from: []string{label}})
		}
	}
	for _, w := range wrapped {
		c := *cfg
		c.Servers = w.servers
		sets = append(sets, serverSet{from: "wrapped by aqlguard init: " + strings.Join(w.from, ", "), cfg: &c, agent: w.agent})
	}
	return sets, remote
}

// withAllServers is cfg with the servers of every set (each name once),
// for the checks that look at server names.
func withAllServers(cfg *config.Config, sets []serverSet) *config.Config {
	c := *cfg
	c.Servers = nil
	seen := map[string]bool{}
	for _, s := range sets {
		for _, srv := range s.cfg.Servers {
			if !seen[srv.Name] {
				seen[srv.Name] = true
				c.Servers = append(c.Servers, srv)
			}
		}
	}
	return &c
}

// noServers says where servers come from when none was found.
func noServers(cfg *config.Config) string {
	return fmt.Sprintf("no server: %s has no [[servers]] and no client config runs one behind aqlguard (aqlguard init wraps them)", source(cfg))
}
