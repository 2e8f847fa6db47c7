package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/audit"
	"github.com/aqlguard/aqlguard/store"
)

// auditKeygen is `audit seal --keygen FILE`: a new Ed25519 key pair for
// signing checkpoints, never inside the state directory.
func auditKeygen(g *globals, path string, stdout io.Writer) error {
	if err := keyOutsideState(g, path); err != nil {
		return err
	}
	id, err := audit.GenerateKey(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote the signing key %s (0600: keep it where whoever can write the state directory cannot read it)\n"+
		"and its public key %s.pub (%s): give that to whoever checks the log (aqlguard audit verify --key %s.pub)\n",
		path, path, id, path)
	return nil
}

// auditSealKey is `audit seal --key FILE`: sign the chain's head.
func auditSealKey(ctx context.Context, st store.State, g *globals, keyPath string, stdout io.Writer) error {
	if err := keyOutsideState(g, keyPath); err != nil {
		return err
	}
	key, err := audit.LoadSigningKey(keyPath)
	if err != nil {
		return err
	}
	c, earlier, err := audit.Seal(ctx, st, key, osUser(), app.ProcessName(), time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "checkpoint signed by %s: records 1 to %d (the last one's hash %s), in state %s; %d earlier checkpoints of this key still hold\n",
		c.Key, c.Seq, c.Hash, c.State, len(earlier.Verified))
	return nil
}

// keyOutsideState refuses a signing key inside the configured state
// directory (audit.OutsideState).
func keyOutsideState(g *globals, path string) error {
	cfg, err := loadConfig(g)
	if err != nil {
		return err
	}
	return audit.OutsideState(path, app.StateDir(cfg))
}

// verifyCheckpoints is `audit verify --key PUB`: every checkpoint PUB
// signed holds over the records each walks (whose chain was verified
// before).
func verifyCheckpoints(pubPath, stateDirPath string, each func(fn func(store.Record) error) error, stdout io.Writer) error {
	// A public key kept in the state directory proves nothing: whoever
	// rewrote the log could have put their own there.
	if err := audit.OutsideState(pubPath, stateDirPath); err != nil {
		return fmt.Errorf("--key: %w", err)
	}
	pub, err := audit.LoadVerifyKey(pubPath)
	if err != nil {
		return fmt.Errorf("--key: %w", err)
	}
	got, err := audit.VerifyCheckpoints(pub, each)
	if err != nil {
		return err
	}
	last := got.Verified[len(got.Verified)-1]
	fmt.Fprintf(stdout, "audit checkpoints verified: %d signed by %s; the last vouches for records 1 to %d (signed %s)",
		len(got.Verified), got.Key, last.Seq, last.Time.UTC().Format(time.RFC3339))
	if got.Others > 0 {
		fmt.Fprintf(stdout, "; %d checkpoints of other keys not checked", got.Others)
	}
	fmt.Fprintln(stdout)
	return nil
}

// stateDirOf is the directory of a state directory's state ("" for
// another backend).
func stateDirOf(st store.State) string {
	if s, ok := st.(*store.Store); ok {
		return filepath.Dir(s.Path())
	}
	return ""
}

// exportRecords walks the records of an export file (JSON lines as
// stored; verifyExport checked the chain).
func exportRecords(path string) func(fn func(store.Record) error) error {
	return func(fn func(store.Record) error) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var r store.Record
			if err := json.Unmarshal(line, &r); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if err := fn(r); err != nil {
				return err
			}
		}
		return sc.Err()
	}
}
