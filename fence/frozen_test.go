package fence_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shepherdzk/shepherd/hold"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence/httpfence"
	"github.com/shepherdzk/shepherd/fence/sqlfence"
	"github.com/shepherdzk/shepherd/internal/testutil"
	"github.com/shepherdzk/shepherd/mutex"
	"github.com/shepherdzk/shepherd/session"
)

// holderEnv carries a holderSpec (JSON) to a holder process: the test
// binary run again (see TestMain).
const holderEnv = "SHEPHERD_FENCE_TEST_HOLDER"

// holderSpec is what a holder process does: lock Path on Servers, then
// write to Target when told.
type holderSpec struct {
	Servers []string
	Path    string        // the lock's path, and the fence's resource
	Timeout time.Duration // its session timeout
	Target  target
}

// target is where holders write: a SQL database (Driver, DSN) with a table
// accounts whose rows "unfenced" and "fenced" they update, or an HTTP
// service (URL) with the routes /unfenced and /fenced.
type target struct {
	Driver, DSN string
	URL         string
}

const accountsSchema = `CREATE TABLE accounts (id TEXT PRIMARY KEY, owner TEXT NOT NULL, token BIGINT NOT NULL)`

// open opens the target's database (nil for HTTP).
func (tg target) open() (*sql.DB, error) {
	if tg.Driver == "" {
		return nil, nil
	}
	return sql.Open(tg.Driver, tg.DSN)
}

// write makes owner, holding tok, write to route: "unfenced" (the
// transaction or request alone) or "fenced" (with the guard: sqlfence.Check
// first in the transaction; the request through httpfence's middleware).
// A stale write's error matches sqlfence.ErrStale or httpfence.ErrStale.
func (tg target) write(ctx context.Context, db *sql.DB, route, resource string, tok hold.Token, owner string) error {
	if db == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, tg.URL+"/"+route, strings.NewReader(owner))
		if err != nil {
			return err
		}
		resp, err := (&http.Client{Transport: httpfence.NewTransport(nil, resource, tok)}).Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if err := httpfence.CheckResponse(resp); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", resp.Status, body)
		}
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if route == "fenced" {
		if err := sqlfence.Check(ctx, tx, resource, tok); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET owner = $1, token = $2 WHERE id = $3", owner, int64(tok), route); err != nil {
		return err
	}
	return tx.Commit()
}

// outcome is a write's result as a holder process prints it.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, sqlfence.ErrStale), errors.Is(err, httpfence.ErrStale):
		return "stale: " + err.Error()
	}
	return "error: " + err.Error()
}

// runHolder is a holder process: it takes the lock, opens its database,
// says "HELD <token>", and then, when a line comes on stdin, writes as the
// holder ("old holder") to both routes, printing each outcome. Between the
// two it does not look at its hold again: its write is decided, as a
// holder's is when a GC pause or SIGSTOP catches it there.
func runHolder() int {
	var spec holderSpec
	if err := json.Unmarshal([]byte(os.Getenv(holderEnv)), &spec); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tok, db, err := holdAndOpen(ctx, spec)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Printf("HELD %d\n", tok)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return 1
	}
	for _, route := range []string{"unfenced", "fenced"} {
		fmt.Printf("%s %s\n", route, outcome(spec.Target.write(ctx, db, route, spec.Path, tok, "old holder")))
	}
	return 0
}

func holdAndOpen(ctx context.Context, spec holderSpec) (hold.Token, *sql.DB, error) {
	s, err := session.Open(ctx, spec.Servers, session.WithSessionTimeout(spec.Timeout))
	if err != nil {
		return 0, nil, err
	}
	m, err := mutex.New(s, spec.Path)
	if err != nil {
		return 0, nil, err
	}
	if err := m.Lock(ctx); err != nil {
		return 0, nil, err
	}
	tok, err := m.Token(ctx)
	if err != nil {
		return 0, nil, err
	}
	db, err := spec.Target.open()
	if err == nil && db != nil {
		err = db.PingContext(ctx) // connected before it freezes
	}
	return tok, db, err
}

// service is an HTTP service of one process: POST /unfenced and POST
// /fenced (behind httpfence's middleware, a memory store) record the body
// as the route's owner.
type service struct {
	mu    sync.Mutex
	owner map[string]string
}

func startService(t *testing.T) (*service, string) {
	svc := &service{owner: map[string]string{"unfenced": "nobody", "fenced": "nobody"}}
	record := func(route string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			svc.mu.Lock()
			svc.owner[route] = string(b)
			svc.mu.Unlock()
		})
	}
	fenced, err := httpfence.Middleware(httpfence.NewMemoryStore())
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("POST /unfenced", record("unfenced"))
	mux.Handle("POST /fenced", fenced(record("fenced")))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return svc, srv.URL
}

func (svc *service) read(route string) string {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	return svc.owner[route]
}

// sqlTarget makes the accounts table in db (and the fence's) and returns
// a reader of a route's owner.
func sqlTarget(t *testing.T, db *sql.DB) func(route string) string {
	ctx := testutil.Ctx(t, 30*time.Second)
	require.NoError(t, sqlfence.Ensure(ctx, db))
	_, err := db.ExecContext(ctx, accountsSchema)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO accounts VALUES ('unfenced', 'nobody', 0), ('fenced', 'nobody', 0)")
	require.NoError(t, err)
	return func(route string) string {
		var owner string
		require.NoError(t, db.QueryRowContext(ctx, "SELECT owner FROM accounts WHERE id = $1", route).Scan(&owner))
		return owner
	}
}

// targets are the three places TestFrozenHolder writes: PostgreSQL,
// SQLite, an HTTP service. Each returns the target, the test's own handle
// on its database (nil for HTTP) and a reader of a route's owner.
var targets = map[string]func(t *testing.T) (target, *sql.DB, func(string) string){
	"postgres": func(t *testing.T) (target, *sql.DB, func(string) string) {
		srv, name := pg.Database(t)
		tg := target{Driver: "pgx", DSN: srv.DSN(name)}
		db, err := tg.open()
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return tg, db, sqlTarget(t, db)
	},
	"sqlite": func(t *testing.T) (target, *sql.DB, func(string) string) {
		file := filepath.Join(t.TempDir(), "accounts.db")
		tg := target{Driver: "sqlite", DSN: "file:" + file + "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"}
		db, err := tg.open()
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return tg, db, sqlTarget(t, db)
	},
	"http": func(t *testing.T) (target, *sql.DB, func(string) string) {
		svc, url := startService(t)
		return target{URL: url}, nil, svc.read
	},
}

// TestFrozenHolder is the failure fencing exists for, and its fix, against
// real PostgreSQL, SQLite and an HTTP service: a holder process (the lock
// taken, its write decided) is frozen with SIGSTOP past its session
// timeout; the server expires its session and a new holder is granted and
// writes; the old one thaws and writes too. Without the guard its stale
// write lands over the new holder's (shown: the "unfenced" row or route);
// with it, it is refused (sqlfence.ErrStale, or 409), and the data is the
// new holder's.
func TestFrozenHolder(t *testing.T) {
	for _, name := range []string{"postgres", "sqlite", "http"} {
		t.Run(name, func(t *testing.T) {
			tg, db, owner := targets[name](t)
			path := testutil.UniquePath(t, "fence-frozen")
			ctx := testutil.Ctx(t, 60*time.Second)
			h := startHolder(t, holderSpec{Servers: zk.Servers(), Path: path, Timeout: time.Second, Target: tg})
			var old hold.Token
			_, err := fmt.Sscanf(h.line(t), "HELD %d", &old)
			require.NoError(t, err)

			require.NoError(t, h.cmd.Process.Signal(syscall.SIGSTOP))
			require.Eventually(t, func() bool { return stopped(h.cmd.Process.Pid) }, 10*time.Second, time.Millisecond)
			frozen := time.Now()
			m, err := mutex.New(testutil.Open(t, zk.Servers()), path)
			require.NoError(t, err)
			require.NoError(t, m.Lock(ctx), "the frozen holder's session never expired")
			tok, err := m.Token(ctx)
			require.NoError(t, err)
			t.Logf("holder (token %d) frozen; a new holder granted %v later, token %d", old, time.Since(frozen).Round(time.Millisecond), tok)
			require.Greater(t, tok, old)
			for _, route := range []string{"unfenced", "fenced"} {
				require.NoError(t, tg.write(ctx, db, route, path, tok, "new holder"))
				require.Equal(t, "new holder", owner(route))
			}

			require.NoError(t, h.cmd.Process.Signal(syscall.SIGCONT))
			_, err = io.WriteString(h.stdin, "write\n")
			require.NoError(t, err)
			require.Equal(t, "unfenced ok", h.line(t), "the old holder's write without the guard")
			refused := h.line(t)
			require.True(t, strings.HasPrefix(refused, "fenced stale: "), "the old holder's write through the guard: %s", refused)
			t.Logf("thawed, it wrote: without the guard, landed; with it: %s", strings.TrimPrefix(refused, "fenced stale: "))
			require.Equal(t, "old holder", owner("unfenced"), "without the guard, the stale write lands over the new holder's")
			require.Equal(t, "new holder", owner("fenced"), "with the guard, the data is the new holder's")
			require.NoError(t, tg.write(ctx, db, "fenced", path, tok, "new holder"), "the new holder writes on")
			require.NoError(t, m.Unlock(ctx))
		})
	}
}

// holder is a running holder process.
type holder struct {
	cmd   *exec.Cmd
	stdin io.Writer
	lines chan string
}

// startHolder starts a holder process for spec, killed when the test ends.
func startHolder(t *testing.T, spec holderSpec) *holder {
	t.Helper()
	b, err := json.Marshal(spec)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+string(b))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	h := &holder{cmd: cmd, stdin: in, lines: make(chan string, 8)}
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return h
}

// line is the holder's next line of output (within 30 s).
func (h *holder) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		require.True(t, ok, "the holder process ended")
		require.False(t, strings.HasPrefix(l, "ERR"), l)
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("no line from the holder process within 30s")
		return ""
	}
}

// stopped reports whether process pid is stopped (state T in /proc).
func stopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "T")
}
