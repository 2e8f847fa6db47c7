package proxy

import (
	"context"
	"log/slog"
	"reflect"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/aqlguard/aqlguard/store"
)

// Reload puts a new configuration in force: the policy for every decision
// from now on (decisions made stand), the server list for every session
// (unchanged servers keep running). A configuration that does not load or
// compile changes nothing. Settings only a restart can change are named
// in the log. Either way the audit log says what happened.
func (sh *Shared) Reload(ctx context.Context, rc *relay.Config, build func() (*config.Config, error), process string) {
	old := sh.CurrentConfig()
	oldPol := sh.Guard.CurrentPolicy()
	record := store.NewRecord(time.Now(), store.KindPolicy, oldPol.Principal, process, "")
	record.Operation = "reload"
	cfg, err := build()
	var pol *policy.Policy
	if err == nil {
		who := cfg.Agent
		if sh.Principal != "" {
			who = sh.Principal
		}
		pol, err = policy.Compile(cfg, who)
	}
	if err == nil {
		err = sh.Guard.SetPolicy(pol)
	}
	if err != nil {
		sh.log().Error("reload refused; the configuration in force stays", "err", err)
		record.Result = "refused: " + err.Error()
		sh.audit(ctx, record, "")
		return
	}
	for _, e := range cfg.NotInEffect {
		sh.log().Warn("the managed policy does not let this setting take effect", "setting", e.Error())
		record.Factors = append(record.Factors, "not in effect: "+e.Error())
	}
	if restartOnly := RestartOnlyChanges(old, cfg); len(restartOnly) > 0 {
		sh.log().Warn("these settings changed but take effect only when aqlguard restarts", "settings", restartOnly)
	}
	sh.SetConfig(cfg)
	rc.Reload(ctx, cfg.Servers)
	record.Decision = pol.Version
	record.Result = "policy " + short(oldPol.Version) + " → " + short(pol.Version)
	sh.log().Info("configuration reloaded", "policy_before", short(oldPol.Version), "policy", short(pol.Version), "servers", len(cfg.Servers))
	sh.audit(ctx, record, pol.Version)
}

// audit records a reload; one that put a policy in force records its
// version as the state's in the same commit (replicas on one state see
// the version change with their next commit).
func (sh *Shared) audit(ctx context.Context, r store.Record, version string) {
	_, err := sh.Guard.State.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{PolicyVersion: version, Records: []store.Record{r}}, nil
	})
	if err != nil {
		sh.log().Error("the reload could not be recorded in the audit log", "err", err)
	}
}

func short(v string) string {
	if len(v) > 12 {
		return v[:12]
	}
	return v
}

// RestartOnlyChanges names the settings a reload does not apply.
func RestartOnlyChanges(old, cfg *config.Config) []string {
	var out []string
	for name, same := range map[string]bool{
		"mode":               old.Mode == cfg.Mode,
		"state_dir":          old.StateDir == cfg.StateDir,
		"state_lock_timeout": old.StateLockTimeout == cfg.StateLockTimeout,
		"limits":             old.Limits == cfg.Limits,
		"audit":              reflect.DeepEqual(old.Audit, cfg.Audit), // [audit.forward] is a pointer
		"verify":             reflect.DeepEqual(old.Verify, cfg.Verify),
		"serve":              sameServe(old.Serve, cfg.Serve),
	} {
		if !same {
			out = append(out, name)
		}
	}
	return out
}

// sameServe compares [serve] but for its clients, which a reload puts
// in force (a revoked token is refused from then on).
func sameServe(a, b config.Serve) bool {
	a.Clients, b.Clients = nil, nil
	return reflect.DeepEqual(a, b)
}

// log is sh.Log, or a logger that discards when none is set.
func (sh *Shared) log() *slog.Logger {
	if sh.Log != nil {
		return sh.Log
	}
	return slog.New(slog.DiscardHandler)
}
