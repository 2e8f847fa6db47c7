package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/proxy"
	"github.com/aqlguard/aqlguard/proxy/names"
	"github.com/aqlguard/aqlguard/store"
)

// reportNames prints what `policy check` finds in the servers' names,
// one line each on stderr, and returns how many: server names that pass
// for each other or for a well-known server's, and, when the servers
// were started (live: what each offers now), the tool and prompt names
// two of them offer. The configured agent's servers recorded in the
// state by other aqlguard processes (the other `aqlguard wrap`s of its
// client) count as the client's too, with --servers. Reports, never a
// failure: two servers may well both offer a "search".
func reportNames(cfg *config.Config, live bool, listings []names.Listing, stderr io.Writer) int {
	return reportNamesOf(source(cfg), cfg, live, listings, stderr)
}

// reportNamesOf is reportNames for servers configured where from says
// (the config, or the client configs whose entries aqlguard wraps).
func reportNamesOf(from string, cfg *config.Config, live bool, listings []names.Listing, stderr io.Writer) int {
	servers := make([]string, 0, len(cfg.Servers))
	for _, s := range cfg.Servers {
		servers = append(servers, s.Name)
	}
	if live {
		for _, n := range recordedForAgent(cfg, stderr) {
			if !slices.Contains(servers, n.Server) {
				servers = append(servers, n.Server)
				listings = append(listings, names.Listing{Server: n.Server, Tools: n.Tools, Prompts: n.Prompts})
			}
		}
	}
	n := 0
	for _, im := range names.Imitations(servers) {
		fmt.Fprintf(stderr, "%s: servers: %s: check that each is the server you meant to install\n", from, im)
		n++
	}
	for _, c := range names.Collisions(listings) {
		fmt.Fprintf(stderr, "%s: servers: %s: the model may call one for the other\n", from, c)
		n++
	}
	return n
}

// recordedForAgent are the server names aqlguard processes recorded for
// the configured agent within proxy.RecordedWithin (none when there is no
// state yet, or it cannot be read: said on stderr).
func recordedForAgent(cfg *config.Config, stderr io.Writer) []store.ServerNames {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all, err := recordedNames(cfg, app.StateDir(cfg))(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s: the server names other aqlguard processes recorded could not be read: %v\n", source(cfg), err)
		return nil
	}
	var out []store.ServerNames
	for _, n := range all {
		if n.Principal == cfg.Agent && time.Since(n.SeenAt) < proxy.RecordedWithin {
			out = append(out, n)
		}
	}
	return out
}
