package app

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aqlguard/aqlguard/config"
)

// configPoll is how often the config file is looked at for changes.
const configPoll = 2 * time.Second

// watchConfig reloads the configuration on SIGHUP and whenever the config
// file changes, until ctx ends. build reads the configuration as it is
// now (loadConfig, and for wrap the wrapping too).
func (in *Instance) WatchConfig(ctx context.Context, build func() (*config.Config, error)) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	path := in.Shared.Config.Path
	var managed string
	if m := in.Shared.Config.Managed; m != nil {
		managed = m.Path
	}
	last, lastManaged := fileStamp(path), fileStamp(managed)
	tick := time.NewTicker(configPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			in.Log.Info("SIGHUP: reloading the configuration")
		case <-tick.C:
			now, nowManaged := fileStamp(path), fileStamp(managed)
			if (path == "" || now == last) && (managed == "" || nowManaged == lastManaged) {
				continue
			}
			last, lastManaged = now, nowManaged
			in.Log.Info("the config file changed: reloading it", "config", path, "managed", managed)
		}
		in.reload(ctx, build)
	}
}

// reload reads the configuration once and puts it in force for every
// principal's guard.
func (in *Instance) reload(ctx context.Context, build func() (*config.Config, error)) {
	cfg, err := build()
	once := func() (*config.Config, error) { return cfg, err }
	in.Shared.Reload(ctx, in.Relay, once, ProcessName())
	in.eachPrincipal(func(p *Principal) { p.shared.Reload(ctx, p.relay, once, ProcessName()) })
	if in.Reloaded != nil {
		in.Reloaded(in.Shared.CurrentConfig())
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
