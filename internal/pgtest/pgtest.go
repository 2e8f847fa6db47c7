// Package pgtest runs throwaway PostgreSQL clusters for tests: Debian's
// postgresql package (initdb and pg_ctl under /usr/lib/postgresql/*/bin
// or on PATH), a data directory in a temporary directory, a unix socket
// only (no TCP port to collide with other tests), trust authentication,
// and, when the tests run as root (CI), the server run as nobody, since
// PostgreSQL refuses to run as root. Nothing is downloaded.
//
// Without PostgreSQL a test skips, loudly; with AQLGUARD_REQUIRE_POSTGRES=1
// (which .ci/run sets after installing it) it fails instead.
package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequireEnv, set to 1, makes a missing PostgreSQL a failure.
const RequireEnv = "AQLGUARD_REQUIRE_POSTGRES"

// superuser is the cluster's superuser (initdb -U).
const superuser = "aqlguard"

// Cluster is one running PostgreSQL cluster.
type Cluster struct {
	bin  string // the directory of initdb, pg_ctl, postgres
	dir  string // root of everything: data/, the socket, the log
	user string // the OS user running the server ("": this process's)
	mu   sync.Mutex
	up   bool
}

var (
	shared     *Cluster
	sharedErr  error
	sharedOnce sync.Once
	dbSeq      atomic.Int64
)

// Main runs a package's tests and stops the shared cluster after them:
// call it from TestMain in every package that uses Shared.
func Main(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.stop()
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// Shared is the cluster the package's tests share (started on first
// use; the package's TestMain must call Main), or a skip.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	bin := binDir(t)
	sharedOnce.Do(func() { shared, sharedErr = start(bin) })
	if sharedErr != nil {
		t.Fatalf("starting PostgreSQL: %v", sharedErr)
	}
	return shared
}

// Private is a cluster of the test's own, stopped and removed when it
// ends: for tests that stop or restart PostgreSQL.
func Private(t testing.TB) *Cluster {
	t.Helper()
	c, err := start(binDir(t))
	if err != nil {
		t.Fatalf("starting PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		c.stop()
		_ = os.RemoveAll(c.dir)
	})
	return c
}

// binDir finds PostgreSQL's server programs, or skips (fails when they
// are required).
func binDir(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	if len(found) > 0 {
		return filepath.Dir(found[0])
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal("PostgreSQL is not installed (.ci/run installs Debian's postgresql package), and " + RequireEnv + "=1")
	}
	t.Skip("\n!!!!!!!! SKIPPING a PostgreSQL test: PostgreSQL is not installed (apt-get install postgresql) !!!!!!!!")
	return ""
}

// version is the major version in /usr/lib/postgresql/<v>/bin/initdb.
func version(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

func start(bin string) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "aqlguard-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		// PostgreSQL will not run as root: the server runs as nobody,
		// which owns the directory.
		c.user = "nobody"
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
		if err := chownTo(dir, c.user); err != nil {
			return nil, err
		}
	}
	if out, err := c.run("initdb", "-D", c.data(), "-U", superuser, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if err := c.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

func chownTo(dir, user string) error {
	out, err := exec.Command("chown", user, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chown %s %s: %v: %s", user, dir, err, out)
	}
	return nil
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// run runs one of PostgreSQL's programs as the cluster's user.
func (c *Cluster) run(prog string, args ...string) ([]byte, error) {
	argv := append([]string{filepath.Join(c.bin, prog)}, args...)
	if c.user != "" {
		argv = append([]string{"runuser", "-u", c.user, "--"}, argv...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// Start starts the cluster (again, after Stop).
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A unix socket in the cluster's directory and no TCP port; fsync
	// off: a test's cluster survives its server's crash (the page cache
	// keeps what was written), not the machine's.
	opts := strings.Join([]string{"-c listen_addresses=''", "-c unix_socket_directories=" + c.dir, "-c fsync=off",
		"-c full_page_writes=off", "-c max_connections=300", "-c shared_buffers=32MB"}, " ")
	if out, err := c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\nserver log:\n%s", err, out, log)
	}
	c.up = true
	return nil
}

// Stop stops the cluster at once (immediate shutdown: as a crash, with
// recovery at the next start).
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopLocked()
}

func (c *Cluster) stop() { _ = c.Stop() }

func (c *Cluster) stopLocked() error {
	if !c.up {
		return nil
	}
	if out, err := c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	c.up = false
	return nil
}

// DSN is the connection string of a database of the cluster.
func (c *Cluster) DSN(database string) string {
	return fmt.Sprintf("host=%s port=5432 user=%s dbname=%s sslmode=disable", c.dir, superuser, database)
}

// Database creates a fresh, empty database for the test and returns its
// connection string; it is dropped when the test ends.
func (c *Cluster) Database(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatalf("connecting to the test cluster: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating a test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		if err != nil {
			return // the cluster is gone with its databases
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return c.DSN(name)
}
