package app

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/internal/procfs"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// StartForwarder runs fw beside the calls until the returned function is
// called (or ctx ends), which then waits for its last delivery.
func StartForwarder(ctx context.Context, fw *forward.Forwarder, log *slog.Logger) func() {
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fw.Run(fctx); err != nil {
			log.Error("the audit forwarder stopped; records are kept in the log and sent from its cursor at the next start", "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// ReportNotInEffect logs, and records in the audit log, what the user's
// file tried that the managed policy does not let take effect: the
// security team reads the attempt there.
func ReportNotInEffect(ctx context.Context, cfg *config.Config, pol *policy.Policy, st store.State, log *slog.Logger) {
	rec := store.NewRecord(time.Now(), store.KindPolicy, pol.Principal, ProcessName(), "")
	rec.Operation, rec.Decision, rec.Result = "not_in_effect", pol.Version, cfg.Managed.Path
	for _, e := range cfg.NotInEffect {
		log.Warn("the managed policy does not let this setting take effect", "setting", e.Error())
		rec.Factors = append(rec.Factors, e.Error())
	}
	if err := store.AppendRecords(ctx, st, rec); err != nil {
		log.Error("what the managed policy kept from taking effect could not be recorded in the audit log", "err", err)
	}
}

// NewGuard builds the guard and the channel to the human; what the
// channel can reach is recorded for doctor.
func NewGuard(cfg *config.Config, pol *policy.Policy, st store.State, log *slog.Logger) *guard.Guard {
	reached := ReachRecorder(cfg, pol, log)
	if cfg.Verify.Channel == "command" {
		// Whether the program answers is its own business; doctor says
		// which channel the client's aqlguard had.
		reached(verify.Display{From: "the command channel (" + cfg.Verify.Command[0] + ")"}, nil)
	}
	return GuardWith(cfg, pol, st, log, HumanChannel(cfg, log, reached))
}

// HumanChannel is the configured channel to the human (each channel
// registered itself with verify); reached, when set, is told what a
// dialog channel can reach (verify.DialogChannel).
func HumanChannel(cfg *config.Config, log *slog.Logger, reached func(verify.Display, error)) verify.Channel {
	ch, err := verify.OpenChannel(cfg.Verify, verify.ChannelSetup{Log: log, Reached: reached})
	if err != nil {
		log.Error("no channel to the human: every question fails and nothing is approved", "err", err)
		return verify.Unreachable(err)
	}
	return ch
}

// GuardWith is the guard of pol on st, reaching the human through ch.
func GuardWith(cfg *config.Config, pol *policy.Policy, st store.State, log *slog.Logger, ch verify.Channel) *guard.Guard {
	return &guard.Guard{
		Policy:             pol,
		State:              st,
		Process:            ProcessName(),
		Channel:            ch,
		InlineWait:         cfg.Verify.InlineWait.Duration,
		AskTimeout:         cfg.Verify.Timeout.Duration,
		ConfirmTTL:         cfg.Verify.ConfirmationTTL.Duration,
		ChallengeTTL:       cfg.Verify.ChallengeTTL.Duration,
		SessionApprovalTTL: cfg.Verify.SessionApprovalTTL.Duration,
		MaxArgumentBytes:   cfg.Audit.MaxArgumentBytes,
		VerifyTool:         proxy.VoiceFor(proxy.Mode(cfg.Mode), nil).VerifyTool,
		Log:                log,
	}
}

// ReachRecorder records, for doctor, where this aqlguard's dialogs
// could go (verify.Reach), when it starts and whenever that changes.
func ReachRecorder(cfg *config.Config, pol *policy.Policy, log *slog.Logger) func(verify.Display, error) {
	var mu sync.Mutex
	var last verify.Reach
	written := false
	dir := verify.ReachDir(StateDir(cfg))
	by := ClientProcess()
	return func(d verify.Display, err error) {
		r := verify.ReachOf(d, err)
		r.Agent, r.StartedBy, r.PID, r.At, r.Channel = pol.Principal, by, os.Getpid(), time.Now().UTC(), cfg.Verify.Channel
		mu.Lock()
		defer mu.Unlock()
		if written && r.Same(last) {
			return
		}
		if err := verify.WriteReach(dir, r); err != nil {
			log.Warn("doctor will not know what this aqlguard's dialogs could reach", "err", err)
			return
		}
		last, written = r, true
	}
}

// ClientProcess names the process that started this aqlguard (the
// parent of its supervisor, if it has one) as "node (pid 4242)".
func ClientProcess() string {
	ppid := os.Getppid()
	if downstream.UnderSupervisor() {
		if st, err := procfs.Read(ppid); err == nil {
			ppid = st.Ppid
		}
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/comm")
	if err != nil {
		return fmt.Sprintf("pid %d", ppid)
	}
	return fmt.Sprintf("%s (pid %d)", strings.TrimSpace(string(comm)), ppid)
}

// ClientKey names the client that started this aqlguard (the parent of
// its supervisor, if it has one, and when that process started, which a
// reused pid does not share), for the board its aqlguard processes share.
func ClientKey() string {
	ppid := os.Getppid()
	if downstream.UnderSupervisor() {
		if st, err := procfs.Read(ppid); err == nil {
			ppid = st.Ppid
		}
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/stat")
	if err != nil {
		return strconv.Itoa(ppid)
	}
	// Field 22 (starttime) counts from the last ")" (a name may hold one).
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(fields) > 19 {
		return strconv.Itoa(ppid) + "-" + fields[19]
	}
	return strconv.Itoa(ppid)
}

// StateDir is the configured state directory, or the default one.
func StateDir(cfg *config.Config) string {
	if cfg.StateDir != "" {
		return cfg.StateDir
	}
	d, _ := store.DefaultDir()
	return d
}

// OpenStore opens the state run and serve decide on (OpenState): the
// state directory, or the PostgreSQL state replicas share. Without it
// nothing can be decided durably, so aqlguard does not start.
// anchorsOff says why the audit log's anchors are not sent to the system
// log ("" when they are, or the state sends none).
func OpenStore(ctx context.Context, cfg *config.Config, log *slog.Logger, wait bool) (st store.State, anchorsOff string, err error) {
	anchor := func() func(string) error {
		a, off := SystemLogAnchor()
		anchorsOff = off
		return a
	}
	st, err = store.OpenBackend(ctx, cfg, store.BackendOptions{Options: store.Options{Log: log}, Wait: wait, NewAnchor: anchor})
	return st, anchorsOff, err
}

// ProcessName tells this process apart in audit records of a shared
// state directory.
func ProcessName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

// AnchorsSaid is what the start line says of the audit anchors, and
// whether their being off (off says why) is worth a warning: only where
// the audit log is meant to go to syslog. A machine without a system
// log (a container, a minimal VM) is not warned at every start.
func AnchorsSaid(cfg *config.Config, off string) (said string, warn bool) {
	if off == "" {
		return "system log", false
	}
	f := cfg.Audit.Forward
	return "off (" + off + ")", f != nil && f.To == "syslog"
}

// AnchorIdent is the system log identifier of the audit anchors.
const AnchorIdent = "aqlguard-audit"
