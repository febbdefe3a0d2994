package session

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/internal/wire/zkpath"
)

// Defaults.
const (
	DefaultSessionTimeout = 10 * time.Second
	DefaultConnectTimeout = time.Second
)

type config struct {
	timeout        time.Duration
	connectTimeout time.Duration
	backoff        func() backoff.BackOff
	namespace      string
	acl            []zk.ACL
	auth           []authInfo
	log            *slog.Logger
	dialer         zk.Dialer
	tls            *tls.Config
	observer       Observer
	policy         DisconnectPolicy
	chroot         string // Connect's: prefixed to namespace
	err            error
}

type authInfo struct {
	scheme string
	cred   []byte
}

// Option configures Open.
type Option func(*config)

// WithSessionTimeout asks for a session timeout (default 10s). The server must
// grant it: if it raises the timeout (its minimum is two ticks), Open fails
// with ErrTimeoutRejected rather than silently detect losses later than asked.
// A lower timeout granted by the server (its maximum) is used as granted.
func WithSessionTimeout(d time.Duration) Option {
	return func(c *config) {
		if d < time.Millisecond || d > 24*time.Hour {
			c.setErr(fmt.Errorf("%w: session timeout %v out of range [1ms, 24h]", ErrInvalidArgument, d))
		}
		c.timeout = d
	}
}

// WithConnectTimeout bounds each TCP connect (with its TLS handshake, under
// WithTLS) and, again, the connect handshake with a server (default 1s). A
// server that accepts connections but does not answer costs at most this long
// (twice with TLS) before the next server is tried.
func WithConnectTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.setErr(fmt.Errorf("%w: connect timeout %v must be positive", ErrInvalidArgument, d))
		}
		c.connectTimeout = d
	}
}

// WithBackoff sets the policy for establishing a new session after Lost and
// for retrying operations whose outcome was unknown (default: exponential from
// 50ms to 2s, with jitter, no time limit). It is called once per retry series.
func WithBackoff(policy func() backoff.BackOff) Option {
	return func(c *config) {
		if policy == nil {
			c.setErr(fmt.Errorf("%w: nil backoff policy", ErrInvalidArgument))
		}
		c.backoff = policy
	}
}

// WithNamespace puts every recipe path under ns (e.g. "/myapp"). Its nodes are
// created on demand. WithNamespace("") adds none. Under Connect, ns is under
// the connect string's chroot.
func WithNamespace(ns string) Option {
	return func(c *config) {
		if ns == "" {
			return // none: a no-op, so that a parsed connect string's "" needs no if
		}
		if err := zkpath.Validate(ns); err != nil {
			c.setErr(fmt.Errorf("%w: namespace: %w", ErrInvalidArgument, err))
		}
		c.namespace = ns
	}
}

// WithACL sets the ACL of every node the recipes create: contender nodes,
// and the paths, parents and containers they create on demand.
//
// The default depends on the session. A session with a principal of its own
// (credentials, WithAuth, or a client certificate in WithTLS's config) gets
// CreatorACL: all permissions to the principals it authenticated as, READ to
// anyone. Nobody else may then delete or overwrite its nodes, nor create
// children under them: a path it created can be joined (locked, leased,
// campaigned for) only by sessions of the same principal. So every holder of
// one path shares one principal (a service account), or WithACL lists the
// principals that may join (e.g. a digest ACL naming each of them). A session
// without a principal gets zk.WorldACL(zk.PermAll): open to all.
//
// ZooKeeper checks a delete against the parent's ACL, not the node's: whoever
// may join a path (CREATE and DELETE on it) may also delete the other
// holders' nodes there, and so end their holds. An ACL keeps out those who
// may not join, never those who may.
func WithACL(acl []zk.ACL) Option {
	return func(c *config) {
		if len(acl) == 0 {
			c.setErr(fmt.Errorf("%w: empty ACL", ErrInvalidArgument))
		}
		c.acl = append([]zk.ACL(nil), acl...)
	}
}

// WithAuth adds credentials (e.g. scheme "digest", "user:password"), sent when
// each session is established and again after every reconnect. They never
// appear in logs or errors.
func WithAuth(scheme string, credentials []byte) Option {
	return func(c *config) {
		if scheme == "" {
			c.setErr(fmt.Errorf("%w: empty auth scheme", ErrInvalidArgument))
		}
		c.auth = append(append([]authInfo(nil), c.auth...), authInfo{scheme, append([]byte(nil), credentials...)})
	}
}

// WithLogger logs the manager's transitions and go-zookeeper's messages to l
// (default: nothing is logged). They are handed to l on a goroutine of the
// manager's own, never on the connection's: a slow or blocked handler delays
// only the log (past 1024 waiting messages, new ones are dropped and counted),
// never the connection, its events or the loss signal.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithDialer makes connections with d (e.g. zktest's Tap, or a proxy). The
// manager still bounds the handshake and watches what it receives. With
// WithTLS as well, d dials TCP and the TLS handshake runs over what it
// returns (so a dialer that reads the bytes, as zktest's Tap does, sees them
// encrypted).
func WithDialer(d zk.Dialer) Option { return func(c *config) { c.dialer = d } }

// WithTLS talks to the servers over TLS configured by cfg (copied: later
// changes to cfg have no effect). The server's certificate is verified
// against cfg.RootCAs (the system's roots when nil) and, unless
// cfg.ServerName is set, against the host of the address being dialled: each
// server of an ensemble is checked against its own name, an IP address
// against the certificate's IP addresses. A client certificate comes from
// cfg.Certificates or cfg.GetClientCertificate. Every connection, each
// reconnect included, is a new handshake, bounded together with the TCP
// connect by the connect timeout. ZooKeeper serves TLS on its
// secureClientPort.
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) {
		if cfg == nil {
			c.setErr(fmt.Errorf("%w: nil TLS config", ErrInvalidArgument))
			return
		}
		c.tls = cfg.Clone()
	}
}

func (c *config) setErr(err error) {
	if c.err == nil {
		c.err = err
	}
}

func defaultBackoff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 50 * time.Millisecond
	b.MaxInterval = 2 * time.Second
	b.MaxElapsedTime = 0
	return b
}

// DisconnectPolicy says what a lost connection does to the holds (locks,
// leases, leaderships) of a session's recipes, while the session itself may
// still be alive (Suspended). See hold.Hold for the states of a hold.
type DisconnectPolicy int

const (
	// StopOnDisconnect (the default) ends every hold at Suspended: its Lost
	// closes and its Context ends the moment the connection is lost. A
	// holder never works on while its session may be gone; a ZooKeeper
	// restart or a network blip that the session survives costs every hold.
	StopOnDisconnect DisconnectPolicy = iota + 1
	// PauseOnDisconnect pauses every hold at Suspended instead: Context is
	// not cancelled, Paused closes, and the holder must not act on the hold
	// (Hold.Gate blocks) until it resumes, at Reconnected of the same
	// session (which proves the session, and so the hold's ephemeral node,
	// lived through the disconnect), after one read confirming the node. It
	// is lost, never resumed, when the session is lost: expired, or silent
	// past the session timeout on the local clock, or closed. What a pause
	// cannot stop is an effect already in flight when the connection
	// dropped: it may land after the session has expired. Only fenced writes
	// (Hold.Fenced) are safe across that line.
	PauseOnDisconnect
)

func (p DisconnectPolicy) String() string {
	switch p {
	case StopOnDisconnect:
		return "stop"
	case PauseOnDisconnect:
		return "pause"
	}
	return fmt.Sprintf("DisconnectPolicy(%d)", int(p))
}

// Valid reports whether p is StopOnDisconnect or PauseOnDisconnect.
func (p DisconnectPolicy) Valid() bool { return p == StopOnDisconnect || p == PauseOnDisconnect }

// WithDisconnectPolicy sets what a lost connection does to the holds of the
// session's recipes (default StopOnDisconnect); a recipe's own option
// overrides it for that recipe value.
func WithDisconnectPolicy(p DisconnectPolicy) Option {
	return func(c *config) {
		if !p.Valid() {
			c.setErr(fmt.Errorf("%w: disconnect policy %v", ErrInvalidArgument, p))
		}
		c.policy = p
	}
}
