package main

import (
	"context"
	"os"
	"os/signal"
	"reflect"
	"syscall"
	"time"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/store"
)

// configPoll is how often the config file is looked at for changes.
const configPoll = 2 * time.Second

// watchConfig reloads the configuration on SIGHUP and whenever the config
// file changes, until ctx ends. build reads the configuration as it is
// now (loadConfig, and for wrap the wrapping too).
func (in *instance) watchConfig(ctx context.Context, build func() (*policy.Config, error)) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	path := in.shared.Config.Path
	last := fileStamp(path)
	tick := time.NewTicker(configPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			in.log.Info("SIGHUP: reloading the configuration")
		case <-tick.C:
			now := fileStamp(path)
			if path == "" || now == last {
				continue
			}
			last = now
			in.log.Info("the config file changed: reloading it", "config", path)
		}
		in.reload(ctx, build)
	}
}

type stamp struct {
	size    int64
	modTime time.Time
}

func fileStamp(path string) stamp {
	if path == "" {
		return stamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	return stamp{fi.Size(), fi.ModTime()}
}

// reload puts a new configuration in force: the policy for every decision
// from now on (decisions made stand), the server list for every session
// (unchanged servers keep running). A configuration that does not load or
// compile changes nothing. Settings only a restart can change are named
// in the log. Either way the audit log says what happened.
func (in *instance) reload(ctx context.Context, build func() (*policy.Config, error)) {
	old := in.shared.CurrentConfig()
	oldPol := in.shared.Guard.CurrentPolicy()
	record := store.Record{Time: time.Now(), Kind: "policy", Principal: oldPol.Principal, Process: processName(), Operation: "reload"}
	cfg, err := build()
	var pol *policy.Policy
	if err == nil {
		pol, err = policy.Compile(cfg, cfg.Agent)
	}
	if err == nil {
		err = in.shared.Guard.SetPolicy(pol)
	}
	if err != nil {
		in.log.Error("reload refused; the configuration in force stays", "err", err)
		record.Result = "refused: " + err.Error()
		in.audit(ctx, record)
		return
	}
	if restartOnly := restartOnlyChanges(old, cfg); len(restartOnly) > 0 {
		in.log.Warn("these settings changed but take effect only when aqlguard restarts", "settings", restartOnly)
	}
	in.shared.SetConfig(cfg)
	in.relay.Reload(ctx, cfg.Servers)
	record.Decision = pol.Version
	record.Result = "policy " + short(oldPol.Version) + " → " + short(pol.Version)
	in.log.Info("configuration reloaded", "policy_before", short(oldPol.Version), "policy", short(pol.Version), "servers", len(cfg.Servers))
	in.audit(ctx, record)
}

func (in *instance) audit(ctx context.Context, r store.Record) {
	if err := in.shared.Guard.Store.Append(ctx, r); err != nil {
		in.log.Error("the reload could not be recorded in the audit log", "err", err)
	}
}

func short(v string) string {
	if len(v) > 12 {
		return v[:12]
	}
	return v
}

// restartOnlyChanges names the settings a reload does not apply.
func restartOnlyChanges(old, cfg *policy.Config) []string {
	var out []string
	for name, same := range map[string]bool{
		"mode":               old.Mode == cfg.Mode,
		"state_dir":          old.StateDir == cfg.StateDir,
		"state_lock_timeout": old.StateLockTimeout == cfg.StateLockTimeout,
		"limits":             old.Limits == cfg.Limits,
		"audit":              old.Audit == cfg.Audit,
		"verify":             reflect.DeepEqual(old.Verify, cfg.Verify),
		"serve":              old.Serve == cfg.Serve,
	} {
		if !same {
			out = append(out, name)
		}
	}
	return out
}
