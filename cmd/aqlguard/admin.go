package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/audit"
	"github.com/aqlguard/aqlguard/store"
)

// The admin verbs work on the state directly (the state directory, or the
// PostgreSQL state replicas share). They are for the human at the
// machine: none of them is an MCP operation, so the model can reach them
// only through a shell the human gave it.

// openAdminStore parses the verb's flags and opens the configured state
// (for a state directory: --state-dir, the config's state_dir or the
// default).
func openAdminStore(name string, args []string, how storeAccess, stderr io.Writer) (store.State, []string, int) {
	fs, g := newFlags(name, stderr)
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, nil, 2
	}
	st, code := storeFor(g, how, stderr)
	return st, rest, code
}

// storeAccess is how an admin command uses the state.
type storeAccess int

const (
	// readState reads an existing state and creates nothing.
	readState storeAccess = iota
	// readHistory reads an existing state whose history may not add up
	// (the audit log is what is read, to find out what happened).
	readHistory
	// writeState changes the state.
	writeState
	// repairState opens a state whose history may not add up, to
	// record what is wrong with it (state reset, audit seal).
	repairState
)

// storeFor opens the state of the config g names; on failure it says why
// on stderr and returns the exit code.
func storeFor(g *globals, how storeAccess, stderr io.Writer) (store.State, int) {
	cfg, err := loadConfig(g)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return nil, 1
	}
	// An admin command writes a record or two and exits: each is fsync'd
	// before the command goes on, not left to a flusher that exits with it.
	cfg.Audit.Sync = string(store.SyncAlways)
	opts := store.Options{ReadOnly: how == readState || how == readHistory, Inspect: how == readHistory || how == repairState}
	st, err := app.OpenState(context.Background(), cfg, opts)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return nil, 1
	}
	if dir, ok := st.(*store.Store); ok {
		for _, w := range dir.Warnings() {
			fmt.Fprintf(stderr, "aqlguard: warning: %s\n", w)
		}
		if p := dir.HistoryProblem(); p != nil && how == readHistory {
			fmt.Fprintf(stderr, "aqlguard: warning: %v\n", p)
		}
	}
	return st, 0
}

// parseInterspersed parses flags anywhere among the arguments (people
// type "aqlguard unblock alice --state-dir X") and returns the others.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return rest, nil
		}
		rest, args = append(rest, args[0]), args[1:]
	}
}

// blockCall is the call that set a block, on one line (its preview is
// already cut to a few hundred bytes), or its operation for a block set
// before blocks kept their call.
func blockCall(b store.Block) string {
	if b.Call == "" {
		return b.Operation
	}
	return oneLine(b.Call)
}

// cmdBlocks is `aqlguard blocks list`.
func cmdBlocks(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "list" {
		fmt.Fprint(stderr, "usage: aqlguard blocks list [--state-dir DIR]\n")
		return 2
	}
	st, rest, code := openAdminStore("blocks list", args[1:], readState, stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "aqlguard blocks list: unexpected argument %q\n", rest[0])
		return 2
	}
	var blocks []store.Block
	if err := st.Load(context.Background(), func(v store.View) (err error) { blocks, err = v.Blocks(); return }); err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	if len(blocks) == 0 {
		fmt.Fprintln(stdout, "no blocked agents")
		return 0
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tBLOCKED AT\tVERIFICATION\tCODE\tREASON\tCALL")
	for _, b := range blocks {
		codeState := "valid until " + b.ChallengeExpiresAt.Local().Format(time.TimeOnly)
		if !now.Before(b.ChallengeExpiresAt) {
			codeState = "expired (a new code is shown at the next call)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", b.Principal, b.BlockedAt.Local().Format(time.RFC3339),
			b.VerificationID, codeState, oneLine(b.Reason), blockCall(b))
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	fmt.Fprintln(stdout, "\nTo lift a block: type or paste the code aqlguard showed you into your chat with the assistant")
	fmt.Fprintln(stdout, "(it passes the code on to aqlguard), or, here in the terminal: aqlguard unblock AGENT")
	return 0
}

// cmdUnblock is `aqlguard unblock AGENT`: the admin override of spec
// 8.8.3. The block's challenge is revoked with it, and the override is
// audited with who ran it.
func cmdUnblock(args []string, stdout, stderr io.Writer) int {
	st, rest, code := openAdminStore("unblock", args, writeState, stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	if len(rest) != 1 {
		fmt.Fprint(stderr, "usage: aqlguard unblock [--state-dir DIR] AGENT\n")
		return 2
	}
	agent := rest[0]
	lifted, err := store.Unblock(context.Background(), st, agent, osUser(), app.ProcessName(), time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: unblocking %s: %v\n", agent, err)
		return 1
	}
	if lifted == nil {
		fmt.Fprintf(stderr, "aqlguard: agent %q is not blocked (see aqlguard blocks list)\n", agent)
		return 1
	}
	fmt.Fprintf(stdout, "unblocked %s (blocked since %s: %s)\n", agent, lifted.BlockedAt.Local().Format(time.RFC3339), oneLine(lifted.Reason))
	return 0
}

func osUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// auditCommands are the words audit takes.
var auditCommands = []string{"list", "show", "export", "tail", "verify", "seal", "report", "forward"}

const auditUsage = `usage: aqlguard audit <list|show|export|tail|verify|seal|report|forward> [flags] [--state-dir DIR]
  list [N]        the last N records (default 50), one line each, fitting 100
                  columns (--wide: whole); a server's tools pinned in a row are
                  one line (--pins: one each)
  show SEQ        one record in full
  export          every record, as JSON lines exactly as stored (hashes
                  included), or --format ocsf: OCSF API Activity events
  tail [-f] [-n N]  the last N records (default 10); -f keeps printing new ones
  verify [FILE]   check the hash chain of the audit log, or of an exported FILE;
                  --anchors also checks it against the heads aqlguard sent to the
                  system log (journald, else /var/log), --anchors-from FILE
                  against the anchor lines in FILE; a torn tail (a write cut
                  short) is told apart from a changed record
  verify --key PUB  also check every checkpoint signed by the Ed25519 public key
                  PUB (audit seal --key): its signature, and that the chain still
                  hashes to the head it signed; a rewritten history fails at
                  the first checkpoint after the change
  seal            record the torn tails of the log as evidence (their bytes stay
                  where they are), so that verify passes again (audited)
  seal --key FILE sign a checkpoint of the chain's head with the Ed25519 key FILE
                  (kept outside the state directory), written as a record,
                  after checking the chain and this key's earlier checkpoints
  seal --keygen FILE  write a new key pair: FILE (0600) and FILE.pub
  report -o FILE  one self-contained HTML file for a reviewer (never printed to a
                  terminal; -o - or a redirect for standard output): a timeline of
                  calls by decision, the calls stopped or asked about with their
                  arguments, answers, codes, policy and tool changes, and the
                  chain's status (default --since 24h)
  forward reset --to start|end|SEQ  move the [audit.forward] destination's
                  cursor (one that does not match the log stops forwarding
                  until it is moved); says what will be sent (audited)
filters (list, export, tail, report): --since T, --until T (RFC 3339, or a
duration back from now: 2h), --agent NAME, --kind KIND. A filtered export
leaves out records, so verify reports a gap in it.
`

// auditFlags are the flags of the audit verbs.
type auditFlags struct {
	format, since, until, agent, kind string
	follow                            bool
	n                                 int
	anchors                           bool
	anchorsFrom                       string
	out                               string
	key, keygen                       string
	pins, wide                        bool
}

func (a *auditFlags) filter(now time.Time) (audit.Filter, error) {
	f := audit.Filter{Agent: a.agent, Kind: a.kind}
	var err error
	if a.since != "" {
		if f.Since, err = audit.ParseTime(a.since, now); err != nil {
			return f, fmt.Errorf("--since: %w", err)
		}
	}
	if a.until != "" {
		if f.Until, err = audit.ParseTime(a.until, now); err != nil {
			return f, fmt.Errorf("--until: %w", err)
		}
	}
	return f, nil
}

// cmdAudit is `aqlguard audit list|show|export|tail|verify`.
func cmdAudit(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, auditUsage)
		return 2
	}
	sub := args[0]
	if asksForHelp(args[:1]) {
		fmt.Fprint(stderr, auditUsage) // no state is opened to say how to use it
		return 2
	}
	if sub == "forward" {
		return cmdAuditForward(args[1:], stdout, stderr)
	}
	fs, g := newFlags("audit "+sub, stderr)
	var af auditFlags
	fs.StringVar(&af.format, "format", "jsonl", "export and tail: jsonl or ocsf")
	fs.StringVar(&af.since, "since", "", "only records at or after this time (RFC 3339, or a duration back from now)")
	fs.StringVar(&af.until, "until", "", "only records before this time")
	fs.StringVar(&af.kind, "kind", "", "only records of this kind (decision, outcome, verification, ...)")
	fs.BoolVar(&af.follow, "f", false, "tail: keep printing new records")
	fs.IntVar(&af.n, "n", 10, "tail: how many records to print first")
	fs.BoolVar(&af.anchors, "anchors", false, "verify: also check the log against the anchors in the system log")
	fs.StringVar(&af.anchorsFrom, "anchors-from", "", "verify: check the log against the anchor lines in this file")
	fs.StringVar(&af.out, "o", "", "report: write the HTML to this file (default: standard output, unless it is a terminal)")
	fs.StringVar(&af.key, "key", "", "seal: sign a checkpoint with this Ed25519 private key; verify: check the checkpoints of this public key")
	fs.StringVar(&af.keygen, "keygen", "", "seal: write a new Ed25519 key pair to this file and FILE.pub")
	fs.BoolVar(&af.pins, "pins", false, "list: one line per pin record (default: a server's run of them is one line)")
	fs.BoolVar(&af.wide, "wide", false, "list: every column whole (default: fits 100 columns)")
	rest, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return 2
	}
	af.agent = g.agent // --agent selects the records of that agent here
	if sub == "report" && af.since == "" {
		af.since = "24h"
	}
	if af.format != "jsonl" && af.format != "ocsf" {
		fmt.Fprintf(stderr, "aqlguard audit %s: --format %q: use jsonl or ocsf\n", sub, af.format)
		return 2
	}
	filter, err := af.filter(time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard audit %s: %v\n", sub, err)
		return 2
	}
	// How many words each command takes after it.
	most := map[string]int{"list": 1, "show": 1, "export": 0, "tail": 0, "verify": 1, "report": 0}[sub]
	if len(rest) > most {
		fmt.Fprintf(stderr, "aqlguard audit %s: unexpected %q\n%s", sub, rest[most], auditUsage)
		return 2
	}
	if (af.key != "" && sub != "seal" && sub != "verify") || (af.keygen != "" && sub != "seal") || (af.key != "" && af.keygen != "") {
		fmt.Fprintf(stderr, "aqlguard audit %s: --key is for seal and verify, --keygen for seal alone, and not both\n", sub)
		return 2
	}
	if sub == "seal" && af.keygen != "" {
		if err := auditKeygen(g, af.keygen, stdout); err != nil {
			fmt.Fprintf(stderr, "aqlguard audit seal --keygen: %v\n", err)
			return 1
		}
		return 0
	}
	if sub == "verify" && len(rest) == 1 {
		code := verifyExport(rest[0], stdout, stderr)
		if code == 0 && af.key != "" {
			if err := verifyCheckpoints(af.key, "", exportRecords(rest[0]), stdout); err != nil {
				fmt.Fprintf(stderr, "aqlguard audit verify: %s: %v\n", rest[0], err)
				return 1
			}
		}
		return code
	}
	if sub == "report" && (af.out == "" && writesToTerminal(stdout)) {
		fmt.Fprintln(stderr, "aqlguard audit report: the report is an HTML page, not for a terminal: write it to a file with -o report.html (or > report.html) and open that in a browser")
		return 2
	}
	how := readHistory
	switch {
	case sub == "seal" && af.key != "":
		how = writeState // signing writes a record, onto a history that adds up
	case sub == "seal":
		how = repairState
	}
	st, code := storeFor(g, how, stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	ctx := context.Background()
	switch sub {
	case "seal":
		if len(rest) > 0 {
			fmt.Fprint(stderr, auditUsage)
			return 2
		}
		if af.key != "" {
			err = auditSealKey(ctx, st, g, af.key, stdout)
			break
		}
		var dir *store.Store
		if dir, err = app.StateDirOnly(st, "audit seal", "a database's chain has no torn tail (a record is written by the commit "+
			"that makes it, whole or not at all), so there is nothing to seal; aqlguard audit verify checks it"); err != nil {
			break
		}
		var recs []store.Record
		recs, err = dir.Seal(ctx, osUser(), app.ProcessName(), time.Now())
		if err == nil && len(recs) == 0 {
			fmt.Fprintln(stdout, "no torn segment to seal")
		}
		for _, r := range recs {
			fmt.Fprintf(stdout, "sealed %s: %d bytes from byte %d (sha256 %s) recorded as evidence in record %d\n",
				r.Gap.Segment, r.Gap.Bytes, r.Gap.Offset, r.Gap.Torn, r.Seq)
		}
	case "list":
		n := 50
		if len(rest) > 0 {
			if n, err = strconv.Atoi(rest[0]); err != nil || n <= 0 {
				fmt.Fprintf(stderr, "aqlguard audit list: %q is not a positive number\n", rest[0])
				return 2
			}
		}
		err = auditList(ctx, st, n, filter, af.pins || af.kind == string(store.KindPin), af.wide, stdout)
	case "show":
		if len(rest) != 1 {
			fmt.Fprint(stderr, auditUsage)
			return 2
		}
		seq, perr := strconv.ParseUint(rest[0], 10, 64)
		if perr != nil || seq == 0 {
			fmt.Fprintf(stderr, "aqlguard audit show: %q is not a record number\n", rest[0])
			return 2
		}
		err = auditShow(ctx, st, seq, stdout)
	case "export":
		w := bufio.NewWriter(stdout)
		_, err = auditWrite(ctx, st, 0, filter, af.format, w)
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
	case "tail":
		sctx, cancel := signalContext()
		defer cancel()
		err = auditTail(sctx, st, af, filter, stdout)
	case "verify":
		err = auditVerify(ctx, st, af, stdout)
		if err == nil && af.key != "" {
			err = verifyCheckpoints(af.key, stateDirOf(st), audit.StateRecords(st), stdout)
		}
	case "report":
		err = auditReport(ctx, st, filter, af.out, stdout, stderr)
	default:
		fmt.Fprint(stderr, auditUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard audit %s: %v\n", sub, err)
		return 1
	}
	return 0
}

// auditReport writes the HTML report of the records f selects, with the
// status of the whole chain, to out ("": stdout), readable only by its
// owner: it holds the calls' arguments.
func auditReport(ctx context.Context, st store.State, f audit.Filter, out string, stdout, stderr io.Writer) error {
	var recs []store.Record
	n, verr := st.VerifyChain(ctx)
	chain := audit.Chain{Verified: verr == nil, Records: n}
	if verr != nil {
		chain.Problem = verr.Error()
	}
	err := eachRecord(st, 0, func(r store.Record, _ []byte) error {
		if f.Match(r) {
			recs = append(recs, r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	opts := audit.ReportOptions{Since: f.Since, Until: f.Until, Generated: time.Now(), Version: version(),
		StateID: st.StateID(), Chain: chain}
	if out == "" || out == "-" {
		return audit.WriteReport(stdout, recs, opts)
	}
	var b bytes.Buffer
	if err := audit.WriteReport(&b, recs, opts); err != nil {
		return err
	}
	if err := os.WriteFile(out, b.Bytes(), 0o600); err != nil {
		return err
	}
	state := "the chain verifies"
	if !chain.Verified {
		state = "THE CHAIN DOES NOT VERIFY: " + chain.Problem
	}
	fmt.Fprintf(stderr, "wrote %s: %d records from %s; %s\n", out, len(recs), opts.Since.Local().Format(time.RFC3339), state)
	return nil
}

// auditWrite writes the selected records from seq from on, in format, and
// returns the last sequence number it saw.
func auditWrite(ctx context.Context, st store.State, from uint64, f audit.Filter, format string, w io.Writer) (uint64, error) {
	last := from
	if from > 0 {
		last = from - 1
	}
	err := eachRecord(st, from, func(r store.Record, raw []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		last = r.Seq
		if !f.Match(r) {
			return nil
		}
		line := raw
		if format == "ocsf" {
			var err error
			if line, err = json.Marshal(audit.OCSF(r, version())); err != nil {
				return err
			}
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
		_, err := w.Write([]byte{'\n'})
		return err
	})
	return last, err
}

// eachRecord calls fn with every record of st's chain from seq from on.
func eachRecord(st store.State, from uint64, fn func(r store.Record, raw []byte) error) error {
	r := st.AuditReader()
	defer r.Close()
	return store.EachRecord(r, from, fn)
}

// auditVerify checks st's whole chain. A state directory's check also
// tells torn tails and accepted gaps, whether the database and the log
// tell one history, and with --anchors whether the log holds the heads
// sent to the system log.
func auditVerify(ctx context.Context, st store.State, af auditFlags, stdout io.Writer) error {
	dir, ok := st.(*store.Store)
	if !ok {
		if af.anchors || af.anchorsFrom != "" {
			return errors.New("--anchors: a PostgreSQL state sends no anchors to the system log; its chain is checked without them")
		}
		n, err := st.VerifyChain(ctx)
		if err == nil {
			fmt.Fprintf(stdout, "audit chain verified: %d records (state %s, %s)\n", n, st.StateID(), app.StateName(st))
		}
		return err
	}
	var v *store.ChainVerifier
	err := dir.View(ctx, func(tx *store.Tx) (err error) { v, err = tx.VerifyChainDetail(); return })
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "audit chain verified: %d records (state %s)\n", v.Count(), st.StateID())
	for _, g := range v.Acknowledged() {
		fmt.Fprintf(stdout, "  acknowledged: %s\n", describeGap(g))
	}
	// The chain holds; the database and the log may still disagree (a
	// database deleted or rolled back).
	if err := dir.HistoryProblem(); err != nil {
		return err
	}
	if !af.anchors && af.anchorsFrom == "" {
		return nil
	}
	anchors, from, err := readAnchors(ctx, af.anchorsFrom)
	if err != nil {
		return err
	}
	var checked int
	err = dir.View(ctx, func(tx *store.Tx) (err error) { checked, err = tx.VerifyAnchors(anchors); return })
	if err == nil {
		fmt.Fprintf(stdout, "audit anchors verified: %d anchored heads from %s are in the log\n", checked, from)
	}
	return err
}

// auditTail prints the last n selected records and, with -f, every new
// one until a signal, polling the database (another process appends).
func auditTail(ctx context.Context, st store.State, af auditFlags, f audit.Filter, w io.Writer) error {
	var head uint64
	var seqs []uint64
	err := eachRecord(st, 0, func(r store.Record, _ []byte) error {
		head = r.Seq
		if f.Match(r) {
			seqs = append(seqs, r.Seq)
		}
		return nil
	})
	if err != nil {
		return err
	}
	from := head + 1
	if len(seqs) > 0 && af.n > 0 {
		from = seqs[max(0, len(seqs)-af.n)]
	}
	for {
		last, err := auditWrite(ctx, st, from, f, af.format, w)
		if err != nil {
			return err
		}
		if last >= from {
			from = last + 1
		}
		if !af.follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// findingsLine says what a result held, by kind and rule ("secret
// aws-access-token, injection override").
func findingsLine(fs []store.Finding) string {
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, strings.TrimSpace(f.Kind+" "+f.Rule))
	}
	return strings.Join(parts, ", ")
}

func auditShow(_ context.Context, st store.State, seq uint64, w io.Writer) error {
	var found *store.Record
	errStop := errors.New("stop")
	err := eachRecord(st, seq, func(r store.Record, _ []byte) error {
		if r.Seq == seq {
			found = &r
		}
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if found == nil {
		return fmt.Errorf("no record %d", seq)
	}
	out, err := json.MarshalIndent(found, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", out)
	return err
}

// verifyExport checks an exported log, line by line, from the genesis.
func verifyExport(path string, stdout, stderr io.Writer) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard audit verify: %v\n", err)
		return 1
	}
	defer f.Close()
	v := store.NewChainVerifier()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	first := true
	for sc.Scan() {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if first {
			first = false
			// Another format, or a slice of the log, is not a broken chain:
			// say what the file is and what can be verified instead.
			if what := notAChain(sc.Bytes()); what != "" {
				fmt.Fprintf(stderr, "aqlguard audit verify: %s %s\n", path, what)
				return 1
			}
		}
		if _, err := v.Next(sc.Bytes()); err != nil {
			fmt.Fprintf(stderr, "aqlguard audit verify: %s: %v\n", path, err)
			return 1
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "aqlguard audit verify: %s: %v\n", path, err)
		return 1
	}
	if err := v.Finish(); err != nil {
		fmt.Fprintf(stderr, "aqlguard audit verify: %s: %v\n", path, err)
		return 1
	}
	fmt.Fprintf(stdout, "audit export verified: %d records (an export cannot show records cut from its end)\n", v.Count())
	return 0
}

// notAChain tells, from an export's first line, a file that is not a
// whole JSON lines export of the chain (which verify can check) from
// one that is (""): an OCSF export, an HTML report, something else, or
// an export that does not start at the first record.
func notAChain(line []byte) string {
	const instead = "; verify the log itself (aqlguard audit verify), or a whole JSON lines export (aqlguard audit export > FILE)"
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) > 0 && trimmed[0] == '<' {
		return "is an HTML file (an audit report?), not an export of the chain" + instead
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(trimmed, &m) != nil {
		return "is not an audit export: its first line is not a JSON object" + instead
	}
	if _, ocsf := m["class_uid"]; ocsf {
		return "is an OCSF export (--format ocsf): OCSF events do not keep the records' exact bytes, " +
			"so the hash chain cannot be checked in it" + instead
	}
	_, hash := m["hash"]
	_, prev := m["prev"]
	raw, seqOK := m["seq"]
	if !hash || !prev || !seqOK {
		return "is not an audit export: its records have no seq, prev and hash" + instead
	}
	var seq uint64
	if json.Unmarshal(raw, &seq) == nil && seq != 1 {
		return fmt.Sprintf("starts at record %d, not at the first: a filtered or partial export "+
			"(--since, --until, --agent, --kind) leaves out records, so it cannot be checked as a chain", seq) + instead
	}
	return ""
}

// readAnchors reads the audit anchors from file, or, with file empty,
// from the system log: journald (journalctl), else the syslog files.
func readAnchors(ctx context.Context, file string) ([]store.Anchor, string, error) {
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		a, err := store.ParseAnchors(f)
		return a, file, err
	}
	if path, err := exec.LookPath("journalctl"); err == nil {
		out, err := exec.CommandContext(ctx, path, "-q", "--no-pager", "-o", "cat", "-t", app.AnchorIdent).Output()
		if err == nil {
			if a, _ := store.ParseAnchors(bytes.NewReader(out)); len(a) > 0 {
				return a, "journald", nil
			}
		}
	}
	for _, p := range []string{"/var/log/auth.log", "/var/log/secure", "/var/log/syslog", "/var/log/messages"} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		a, _ := store.ParseAnchors(f)
		f.Close()
		if len(a) > 0 {
			return a, p, nil
		}
	}
	return nil, "", errors.New("no audit anchors in the system log (journald or /var/log): is a system log running, and readable by this user?")
}

// describeGap says what a seal or reset acknowledged.
func describeGap(g store.Gap) string {
	if g.Segment != "" {
		return fmt.Sprintf("torn tail of %s, %d bytes from byte %d, sealed", g.Segment, g.Bytes, g.Offset)
	}
	return fmt.Sprintf("records %d to %d missing, accepted by a state reset", g.AfterSeq+1, g.ResumeSeq-1)
}

const stateUsage = `usage: aqlguard state reset --i-understand [--state-dir DIR]
       aqlguard state copy --to postgres|bbolt [--resume] [--state-dir DIR]   (aqlguard state copy -h)

Accepts the state directory as it is now, when aqlguard refuses to start
because its database and its audit log do not tell the same history (a
database deleted, emptied, replaced or rolled back; log segments or
records removed). What was found, and every gap in the log, is written
into the audit log with your name; blocks and approvals the database has
lost stay lost. Restore the missing files from a backup instead if you can.
`

// cmdState is `aqlguard state reset --i-understand`.
func cmdState(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "copy" {
		return cmdStateCopy(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "reset" {
		fmt.Fprint(stderr, stateUsage)
		return 2
	}
	fs, g := newFlags("state reset", stderr)
	understood := fs.Bool("i-understand", false, "accept that what the state database lost stays lost")
	rest, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return 2
	}
	if len(rest) > 0 || !*understood {
		fmt.Fprint(stderr, stateUsage)
		return 2
	}
	opened, code := storeFor(g, repairState, stderr)
	if opened == nil {
		return code
	}
	defer opened.Close()
	st, err := app.StateDirOnly(opened, "state reset", "a database keeps its rows and its audit chain in the same commits, "+
		"so they cannot tell two histories; aqlguard audit verify checks its chain")
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard state reset: %v\n", err)
		return 1
	}
	problem := st.HistoryProblem()
	recs, err := st.Reset(context.Background(), osUser(), app.ProcessName(), time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard state reset: %v\n", err)
		return 1
	}
	if len(recs) == 0 {
		fmt.Fprintln(stdout, "the state directory's database and audit log agree: nothing to reset")
		return 0
	}
	if problem != nil {
		fmt.Fprintf(stdout, "accepted: %v\n", problem)
	}
	for _, r := range recs {
		if r.Gap != nil {
			fmt.Fprintf(stdout, "  gap recorded: %s\n", describeGap(*r.Gap))
		}
	}
	fmt.Fprintf(stdout, "recorded in the audit log as record %d; aqlguard starts on this state again\n", recs[0].Seq)
	return 0
}
