package remoteauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aqlguard/aqlguard/internal/atomicfile"
	"github.com/zalando/go-keyring"
	"golang.org/x/oauth2"
)

// keyringService names aqlguard's entries in the OS keyring.
const keyringService = "aqlguard"

// Grant is what a server's authorization leaves to keep: the client it
// registered as and the tokens it got, so that the next start refreshes
// instead of asking the human again.
type Grant struct {
	URL          string           `json:"url"`
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style"`
	Scopes       []string         `json:"scopes,omitempty"`
	Resource     string           `json:"resource,omitempty"`
	Token        *oauth2.Token    `json:"token"`
}

// Store keeps grants in the OS keyring (the Secret Service, the macOS
// keychain, the Windows credential manager) and, on a machine without
// one (a server, a container, CI), in files of the state directory that
// only the user can read (0600, in a 0700 directory). Nothing in a grant
// is ever logged.
type Store struct {
	Dir string // the state directory's oauth/ (files)
	// NoKeyring keeps grants in files only (tests; a keyring that asks
	// for a password on every start).
	NoKeyring bool
}

func (s *Store) file(key string) string { return filepath.Join(s.Dir, key+".json") }

// Load returns the grant kept under key, nil if there is none.
func (s *Store) Load(key string) (*Grant, error) {
	var data []byte
	if !s.NoKeyring {
		secret, err := keyring.Get(keyringService, key)
		if err == nil {
			data = []byte(secret)
		} else if !errors.Is(err, keyring.ErrNotFound) && !noKeyring(err) {
			return nil, fmt.Errorf("reading the OS keyring: %s", errKind(err))
		}
	}
	if data == nil {
		b, err := os.ReadFile(s.file(key))
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", s.file(key), err)
		}
		data = b
	}
	var g Grant
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, errors.New("a kept authorization does not decode; it is ignored")
	}
	return &g, nil
}

// Save keeps g under key: in the keyring if there is one, else in a
// 0600 file (written anew and renamed, so a crash leaves the old grant
// or the new one).
func (s *Store) Save(key string, g *Grant) error {
	data, err := json.Marshal(g)
	if err != nil {
		return err
	}
	if !s.NoKeyring {
		err := keyring.Set(keyringService, key, string(data))
		if err == nil {
			_ = os.Remove(s.file(key)) // an older copy from before the keyring
			return nil
		}
		if !noKeyring(err) {
			return fmt.Errorf("writing the OS keyring: %s", errKind(err))
		}
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(s.file(key), data, 0o600)
}

// noKeyring reports whether err says there is no keyring to use (no
// D-Bus session, no Secret Service): the file store then.
func noKeyring(err error) bool {
	if errors.Is(err, keyring.ErrUnsupportedPlatform) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"dbus", "d-bus", "secret service", "org.freedesktop", "no such interface", "connection refused", "not provided by any .service"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// errKind says what went wrong with the keyring without its text, which
// is the keyring's and could quote what was asked of it.
func errKind(err error) string {
	switch {
	case errors.Is(err, keyring.ErrSetDataTooBig):
		return "the grant is too big for it"
	}
	return "it refused (see the OS keyring's own log)"
}
