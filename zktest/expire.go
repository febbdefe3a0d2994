package zktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
)

// maxExpireTries and expireBudget bound ExpireSession's attempts on one
// server whose connection ended before its answer (see ExpireSession).
const (
	maxExpireTries = 200
	expireBudget   = 10 * time.Second
)

// attemptTimeout bounds the work on one server, so that a server that accepts
// connections but never answers does not keep the next one from being tried.
const attemptTimeout = 3 * time.Second

// ExpireSession makes ZooKeeper end cred's session at once, as if it had
// expired: the server deletes the session's ephemeral nodes, fires their
// watches and drops the session's connection; the client then hears that the
// session expired when it reconnects (go-zookeeper: StateExpired, within
// milliseconds when it has a second server to try).
//
// It attaches a connection to the session with cred's ID and password, sends
// closeSession, waits for the server's reply and closes the connection. The
// servers are tried in order until one confirms; each attempt gets at most
// 3 s, less if ctx ends sooner. A connection that ends before the reply (the
// client took its session back meanwhile, which a client that reconnects at
// once can do again and again) is attached again, for up to 10 s a server. If a server reports that the session does not exist
// (already expired or closed, or a wrong password) the error wraps
// zk.ErrSessionExpired — unless an earlier attempt had already sent
// closeSession, in which case the session is gone as asked and the result is
// nil. If no server confirms, the error lists each server's failure.
func ExpireSession(ctx context.Context, servers []string, cred Credentials) error {
	if err := checkArgs(servers, cred); err != nil {
		return fmt.Errorf("zktest: expire session: %w", err)
	}
	var errs []error
	closeSent := false
	for _, addr := range servers {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		began := time.Now()
		sent, err := expireOn(ctx, addr, cred)
		for try := 0; try < maxExpireTries && time.Since(began) < expireBudget && err != nil &&
			(errors.Is(err, io.EOF) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() == nil; try++ {
			// (A server too busy to answer within an attempt's time is
			// asked again, like one that dropped the connection.)
			// The connection ended before the server's answer: the client
			// took its session back in between (then attach again), or the
			// server closed the session and the connection with it (then the
			// next attach is refused: the session is gone, as asked).
			// (closeSession went out with the attach, so it may have
			// been applied even when the attach's answer was lost.)
			// The client has a head start in that race: the server
			// closes its connection before it checks and answers ours,
			// and on a loaded machine it won 11 times in a row once (a
			// fence test's "await closeSession reply: EOF"): ask again
			// for up to expireBudget, not ten times.
			closeSent = true
			sent, err = expireOn(ctx, addr, cred)
		}
		if err == nil || (closeSent && errors.Is(err, zk.ErrSessionExpired)) {
			return nil
		}
		if errors.Is(err, zk.ErrSessionExpired) {
			return fmt.Errorf("zktest: expire %v: %w", cred, err)
		}
		closeSent = closeSent || sent
		errs = append(errs, err)
	}
	return fmt.Errorf("zktest: expire %v: no server closed it: %w", cred, errors.Join(errs...))
}

// expireOn closes cred's session through addr. sent reports whether the
// closeSession request was written, so the session may be gone even if err is
// not nil.
func expireOn(ctx context.Context, addr string, cred Credentials) (sent bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	conn, err := attach(ctx, addr, cred, zkwire.CloseSessionRequest(closeSessionXid), nil)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	// Nothing else is expected on a connection that set no watches, but skip a
	// few unrelated frames rather than misread one.
	for range 16 {
		body, err := zkwire.ReadFrame(conn, maxReplyFrame)
		if err != nil {
			return true, fmt.Errorf("%s: await closeSession reply: %w", addr, ctxErr(ctx, err))
		}
		h, err := zkwire.ParseReplyHeader(body)
		if err != nil {
			return true, fmt.Errorf("%s: %w", addr, err)
		}
		if h.Xid != closeSessionXid {
			continue
		}
		if h.Err != 0 {
			return true, fmt.Errorf("%s: closeSession failed: ZooKeeper error code %d", addr, h.Err)
		}
		return true, nil
	}
	return true, fmt.Errorf("%s: no closeSession reply among 16 frames", addr)
}

// DisconnectSession closes the connection of cred's session without ending the
// session: the client is disconnected (go-zookeeper: StateDisconnected) and
// then rejoins the same session (StateHasSession with the same SessionID), its
// ephemeral nodes intact. It is a disconnect injector that needs no proxy.
//
// It finds the server that holds the session's connection (with the
// four-letter word "cons", which servers started by this package allow) and
// asks that server to reattach the session to a new connection. ZooKeeper
// closes the session's current connection as soon as a reattach arrives,
// before it checks the password (verified on 3.8); DisconnectSession presents no
// password, so the reattach is then refused and the session is neither
// touched nor moved. It returns once that server no longer lists the refused
// connection (which it names with the session's ID until it closes it), so
// that a next call finds the server the client is on. Only cred.SessionID is
// used.
//
// A reattach with the right password would not do: it moves the session's
// ownership to that server, and in an ensemble a client that reconnects
// elsewhere faster than that move reaches the leader has its next write fail
// ("session moved") with a second, unplanned disconnect. Nor would any other
// server: a server closes only connections it holds itself.
//
// Each step is bounded by ctx, and each server by 3 s. It fails if no server in
// servers holds a connection of the session (for instance while the client is
// reconnecting, or if the session is gone).
func DisconnectSession(ctx context.Context, servers []string, cred Credentials) error {
	if err := checkArgs(servers, cred); err != nil {
		return fmt.Errorf("zktest: disconnect session: %w", err)
	}
	addr, err := locateSession(ctx, servers, cred.SessionID)
	if err != nil {
		return fmt.Errorf("zktest: disconnect %v: %w", cred, err)
	}
	if err := disconnectOn(ctx, addr, cred.SessionID); err != nil {
		return fmt.Errorf("zktest: disconnect %v: %w", cred, err)
	}
	return nil
}

// locateSession returns the first of servers whose "cons" lists a connection
// of session id.
func locateSession(ctx context.Context, servers []string, id int64) (string, error) {
	var errs []error
	for _, addr := range servers {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		out, err := FourLetterWord(actx, addr, "cons")
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if consHasSession(out, id) {
			return addr, nil
		}
		if !strings.Contains(out, "queued=") { // e.g. "cons is not executed because it is not in the whitelist."
			errs = append(errs, fmt.Errorf("%s: cons: %q", addr, strings.TrimSpace(out)))
		}
	}
	switch {
	case len(errs) == len(servers):
		return "", fmt.Errorf("no server could be asked for the session's connection: %w", errors.Join(errs...))
	case len(errs) > 0:
		return "", fmt.Errorf("no server holds a connection of the session (some could not be asked): %w", errors.Join(errs...))
	}
	return "", errors.New("no server holds a connection of the session")
}

// consHasSession reports whether the output of "cons" lists a connection of
// session id (a line with "sid=0x<hex>," or "sid=0x<hex>)").
func consHasSession(cons string, id int64) bool {
	sid := "sid=0x" + strconv.FormatUint(uint64(id), 16)
	for rest := cons; ; {
		i := strings.Index(rest, sid)
		if i < 0 {
			return false
		}
		rest = rest[i+len(sid):]
		if rest == "" || rest[0] == ',' || rest[0] == ')' {
			return true
		}
	}
}

// disconnectOn asks addr to reattach session id without a password, which
// closes the session's connection on addr and is then refused.
//
// It returns once addr no longer lists the refused connection: the server
// gives it the session's ID before it checks the password and closes it on
// its own time, and while it is listed as the session's, a next call's
// "cons" would find the session on addr after the client has moved to
// another server (seen once in make test: a DisconnectSession that
// disconnected nothing).
func disconnectOn(ctx context.Context, addr string, id int64) error {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	var local string
	conn, err := attach(ctx, addr, Credentials{SessionID: id}, nil, &local)
	if errors.Is(err, zk.ErrSessionExpired) {
		return awaitUnlisted(ctx, addr, local) // refused, as intended
	}
	if err != nil {
		return err
	}
	conn.Close()
	return fmt.Errorf("%s: the server reattached the session without its password", addr)
}

// awaitUnlisted waits until addr's "cons" no longer lists a connection from
// local (host:port, as the client sees its end), bounded by ctx.
func awaitUnlisted(ctx context.Context, addr, local string) error {
	tag := "/" + local + "["
	for {
		out, err := FourLetterWord(ctx, addr, "cons")
		if err != nil {
			return fmt.Errorf("%s: await the close of the refused reattach: %w", addr, err)
		}
		if !strings.Contains(out, tag) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: still lists the refused reattach from %s: %w", addr, local, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func checkArgs(servers []string, cred Credentials) error {
	if len(servers) == 0 {
		return errors.New("no servers")
	}
	if cred.SessionID == 0 {
		return errors.New("no session ID in the credentials")
	}
	return nil
}

// attach opens a connection to addr and attaches it to cred's session. It
// returns once the server has accepted the session (so the server has already
// closed any other connection of the session it held), with a connection whose
// deadline is ctx's. The caller must close it. local, if not nil, is set to
// the connection's own end (host:port) once dialled.
//
// then, if not empty, is sent right behind the ConnectRequest, in the same
// write: the server reads it once the session is attached. Pipelining
// matters: a client that reconnects at once (shepherd's session manager does)
// takes its session back in the moment between the ConnectResponse and a
// request sent after it.
func attach(ctx context.Context, addr string, cred Credentials, then []byte, local *string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	if local != nil {
		*local = conn.LocalAddr().String()
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// Unblock a read or write when ctx is cancelled, not only at its deadline.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(step string, err error) (net.Conn, error) {
		stop()
		conn.Close()
		return nil, fmt.Errorf("%s: %s: %w", addr, step, ctxErr(ctx, err))
	}
	if _, err := conn.Write(append(connectRequest(cred, 0), then...)); err != nil {
		return fail("send ConnectRequest", err)
	}
	body, err := zkwire.ReadFrame(conn, zkwire.MaxConnectResponse)
	if err != nil {
		return fail("await ConnectResponse", err)
	}
	got, err := parseConnectResponse(body)
	if err != nil {
		return fail("decode", err)
	}
	switch got.SessionID {
	case cred.SessionID:
		return &stopConn{Conn: conn, stop: stop}, nil
	case 0:
		return fail("attach", zk.ErrSessionExpired)
	default:
		return fail("attach", fmt.Errorf("server answered with session 0x%x", got.SessionID))
	}
}

// stopConn releases attach's context hook when closed.
type stopConn struct {
	net.Conn
	stop func() bool
}

func (c *stopConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

// ctxErr prefers ctx's error to the I/O error it caused (a deadline set from
// ctx, or the connection unblocked on cancellation).
func ctxErr(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if dl, ok := ctx.Deadline(); ok && cerr == nil && !time.Now().Before(dl) {
		// The connection's deadline, copied from ctx, can fire before ctx's
		// own timer has marked it done.
		cerr = context.DeadlineExceeded
	}
	if cerr != nil {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}
