package audit

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/store"
)

// Signed checkpoints make the audit chain's history checkable by a third
// party. The hash chain shows that records were changed, but whoever can
// write the state directory can also re-chain every record after the
// one they edited, and the chain verifies again. A checkpoint is a head
// of the chain (record N has hash H, in state S, at time T) signed with
// an Ed25519 key that lives outside the state directory: a rewrite below
// N changes H, and nobody without the key can sign the new one. The
// checkpoint is itself a record of the chain (kind "checkpoint"), so it
// is exported, copied and forwarded with the records it covers, and
// `audit verify --key PUB` checks any copy offline with the public key
// alone.

// CheckpointMessage is what a checkpoint's signature covers: a fixed
// text naming the version, the state, the record and its hash, and the
// time, one per line.
func CheckpointMessage(c store.Checkpoint) []byte {
	return []byte("aqlguard audit checkpoint v1\nstate " + c.State + "\nseq " + strconv.FormatUint(c.Seq, 10) +
		"\nhash " + c.Hash + "\ntime " + c.Time.UTC().Format(time.RFC3339Nano) + "\n")
}

// KeyID names a public key: "ed25519:" and the first 16 bytes of its
// SHA-256, in hex.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return "ed25519:" + hex.EncodeToString(sum[:16])
}

// SignCheckpoint signs head (the record it covers) of state at time at.
func SignCheckpoint(key ed25519.PrivateKey, state string, head store.Record, at time.Time) store.Checkpoint {
	c := store.Checkpoint{Seq: head.Seq, Hash: head.Hash, State: state, Time: at.UTC(),
		Key: KeyID(key.Public().(ed25519.PublicKey))}
	c.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(key, CheckpointMessage(c)))
	return c
}

// CheckpointRecord is the record that carries c.
func CheckpointRecord(c store.Checkpoint, by, process string) store.Record {
	r := store.NewRecord(c.Time, store.KindCheckpoint, by, process, "")
	r.Checkpoint = &c
	return r
}

// CheckpointError is a checkpoint that does not hold: its signature
// does not verify, or the chain no longer hashes to the head it signed.
type CheckpointError struct {
	Record     uint64 // the checkpoint's own record
	Checkpoint store.Checkpoint
	Problem    string
}

func (e *CheckpointError) Error() string {
	return fmt.Sprintf("the checkpoint in record %d (records 1 to %d, signed %s by %s) does not hold: %s",
		e.Record, e.Checkpoint.Seq, e.Checkpoint.Time.UTC().Format(time.RFC3339), e.Checkpoint.Key, e.Problem)
}

// Checkpoints is what VerifyCheckpoints found.
type Checkpoints struct {
	Key string // KeyID of the key checked against
	// Verified are the checkpoints signed by Key, in the log's order;
	// each holds.
	Verified []store.Checkpoint
	// Others counts the checkpoints signed by other keys (not checked).
	Others int
}

// ErrNoCheckpoint says the log holds no checkpoint signed by the key:
// nothing of its history is vouched for.
var ErrNoCheckpoint = errors.New("no checkpoint signed by this key")

// VerifyCheckpoints checks every checkpoint signed by pub in the chain
// each walks (every record, in order; it is walked twice): its
// signature, and that the record it names is in the chain with the hash
// it signed. The chain itself must verify on its own (store's
// ChainVerifier): then a record's hash as stored is its true hash, and
// the record at a checkpoint's head having the signed hash means every
// record up to it is as it was signed. The first checkpoint that does
// not hold is a *CheckpointError; a log with none signed by pub is
// ErrNoCheckpoint.
func VerifyCheckpoints(pub ed25519.PublicKey, each func(fn func(r store.Record) error) error) (Checkpoints, error) {
	out := Checkpoints{Key: KeyID(pub)}
	type found struct {
		record uint64
		c      store.Checkpoint
	}
	var mine []found
	var others []string
	covers := map[uint64]string{} // seq -> hash, filled in the second walk
	err := each(func(r store.Record) error {
		if r.Checkpoint == nil {
			return nil
		}
		if r.Kind != string(store.KindCheckpoint) {
			return &CheckpointError{Record: r.Seq, Checkpoint: *r.Checkpoint, Problem: "it is carried by a record of kind " + strconv.Quote(r.Kind)}
		}
		if r.Checkpoint.Key != out.Key {
			out.Others++
			if len(others) < 3 && !slices.Contains(others, r.Checkpoint.Key) {
				others = append(others, r.Checkpoint.Key)
			}
			return nil
		}
		mine = append(mine, found{r.Seq, *r.Checkpoint})
		covers[r.Checkpoint.Seq] = ""
		return nil
	})
	if err != nil {
		return out, err
	}
	if len(mine) == 0 {
		if out.Others > 0 {
			return out, fmt.Errorf("%w (%s); the log's %d checkpoints are signed by %s", ErrNoCheckpoint, out.Key, out.Others,
				strings.Join(others, ", "))
		}
		return out, fmt.Errorf("%w (%s): the log holds no checkpoint at all (aqlguard audit seal --key makes one)", ErrNoCheckpoint, out.Key)
	}
	err = each(func(r store.Record) error {
		if _, ok := covers[r.Seq]; ok {
			covers[r.Seq] = r.Hash
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	for _, f := range mine {
		bad := func(problem string) error {
			return &CheckpointError{Record: f.record, Checkpoint: f.c, Problem: problem}
		}
		sig, err := base64.StdEncoding.DecodeString(f.c.Sig)
		switch {
		case err != nil || len(sig) != ed25519.SignatureSize:
			return out, bad("its signature does not read")
		case !ed25519.Verify(pub, CheckpointMessage(f.c), sig):
			return out, bad("its signature does not verify: the checkpoint was changed, or made without the key")
		case f.c.Seq >= f.record:
			return out, bad(fmt.Sprintf("it names record %d, which does not come before it", f.c.Seq))
		}
		switch got := covers[f.c.Seq]; {
		case got == "":
			return out, bad(fmt.Sprintf("record %d, whose hash it signed, is not in the log", f.c.Seq))
		case got != f.c.Hash:
			return out, bad(fmt.Sprintf("record %d has hash %s, the checkpoint signed %s: the history up to record %d was rewritten",
				f.c.Seq, short(got), short(f.c.Hash), f.c.Seq))
		}
		out.Verified = append(out.Verified, f.c)
	}
	return out, nil
}

func short(hash string) string {
	if len(hash) > 16 {
		return hash[:16] + "…"
	}
	return hash
}

// GenerateKey writes a new Ed25519 key pair: the private key to path
// (PKCS #8 PEM, 0600, never over an existing file) and the public key to
// path + ".pub" (PKIX PEM, 0644; `openssl pkey -pubin` reads it). It
// returns the public key's KeyID.
func GenerateKey(path string) (string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	if err := writeNew(path+".pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return "", err
	}
	if err := writeNew(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}), 0o600); err != nil {
		os.Remove(path + ".pub")
		return "", err
	}
	return KeyID(pub), nil
}

// writeNew writes a file that must not exist yet, durably.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// LoadSigningKey reads the private key at path. It refuses a key that
// group or others may read, as ssh does.
func LoadSigningKey(path string) (ed25519.PrivateKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: the signing key may be read by others (mode %04o): chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := readPEM(path, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an Ed25519 key", path)
	}
	return priv, nil
}

// LoadVerifyKey reads the public key at path (what GenerateKey wrote to
// path.pub, or any PKIX PEM of an Ed25519 key).
func LoadVerifyKey(path string) (ed25519.PublicKey, error) {
	b, err := readPEM(path, "PUBLIC KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKIXPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an Ed25519 public key", path)
	}
	return pub, nil
}

func readPEM(path, kind string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	if block.Type != kind {
		// Never echo the file: a private key given as the public one
		// stays out of the error.
		return nil, fmt.Errorf("%s holds a %q PEM block, want %q", path, block.Type, kind)
	}
	return block.Bytes, nil
}

// OutsideState refuses a key path inside the state directory: whoever
// can rewrite the log there could read the key beside it and sign the
// rewritten history. Both paths are compared after symbolic links are
// resolved (as far as they exist).
func OutsideState(key, stateDir string) error {
	if stateDir == "" {
		return nil
	}
	k, err := realPath(key)
	if err != nil {
		return err
	}
	s, err := realPath(stateDir)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(s, k); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("the signing key %s is inside the state directory %s: keep it where whoever can write the state cannot read it", key, stateDir)
	}
	return nil
}

// realPath is path absolute with its symbolic links resolved, as far as
// its directories exist (a key not written yet is resolved through its
// parent).
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var rest []string
	for p := abs; ; p = filepath.Dir(p) {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(p) == p {
			return "", err
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}

// StateRecords walks every record of st's chain, in order (for
// VerifyCheckpoints).
func StateRecords(st store.State) func(fn func(store.Record) error) error {
	return func(fn func(store.Record) error) error {
		r := st.AuditReader()
		defer r.Close()
		return store.EachRecord(r, 0, func(rec store.Record, _ []byte) error { return fn(rec) })
	}
}

// Seal signs the head of st's chain with key and appends the checkpoint
// record, after checking that the chain verifies and that every earlier
// checkpoint of the same key still holds: a key never vouches for a
// history that no longer matches what it signed before. It returns the
// checkpoint and the earlier ones it checked.
func Seal(ctx context.Context, st store.State, key ed25519.PrivateKey, by, process string, now time.Time) (store.Checkpoint, Checkpoints, error) {
	var c store.Checkpoint
	if _, err := st.VerifyChain(ctx); err != nil {
		return c, Checkpoints{}, fmt.Errorf("the audit chain does not verify, so nothing is signed: %w", err)
	}
	earlier, err := VerifyCheckpoints(key.Public().(ed25519.PublicKey), StateRecords(st))
	if err != nil && !errors.Is(err, ErrNoCheckpoint) {
		return c, earlier, fmt.Errorf("nothing is signed: %w", err)
	}
	r := st.AuditReader()
	_, head, err := r.End()
	r.Close()
	if err != nil {
		return c, earlier, err
	}
	if head == nil {
		return c, earlier, errors.New("the audit log is empty: there is no head to sign")
	}
	c = SignCheckpoint(key, st.StateID(), *head, now)
	if err := store.AppendRecords(ctx, st, CheckpointRecord(c, by, process)); err != nil {
		return c, earlier, fmt.Errorf("writing the checkpoint record: %w", err)
	}
	return c, earlier, nil
}
