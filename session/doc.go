// Package session is shepherd's session manager: it owns one ZooKeeper session
// at a time — connects, reconnects, expiry — and tells recipes and listeners
// about every change, in Curator's vocabulary:
//
//   - Connected: a new session is established (a new session ID).
//   - Suspended: the connection is lost; the session may still be alive.
//   - Reconnected: the same session is back; its ephemeral nodes survived.
//   - Lost: the session is gone, or must be assumed gone; its ephemeral nodes
//     are (or will be) deleted by the server. A new session follows.
//   - Closed: Close was called.
//
// # Holds and the loss signal
//
// Each connected stretch of a session is an Epoch. Its Context is cancelled the
// moment the connection is lost (Suspended), the session is lost, or the
// session is closed — synchronously, where the loss is noticed (go-zookeeper's
// event callback, or the manager's own clock when no request has been
// answered for the read timeout), not behind a queue or a listener. Nothing on that
// path can block: not even logging, which the manager does on a goroutine of
// its own. A recipe derives the context of every hold
// (lock, lease, leadership) from it, so the holder learns it may have lost its
// hold within microseconds of the disconnect. When the server ends a session
// (expiry, or a session closed from elsewhere) it drops the connection and
// deletes the session's ephemeral nodes together, and another client is granted
// the freed resource some milliseconds later: the holder is told first.
// Treating Suspended as a loss is deliberate — a disconnected client cannot
// know whether its session still exists, and keeping a hold through a
// disconnect "for a grace period" is how two holders happen.
//
// What is not guaranteed: a session closed by the server while the holder's
// connection is still attached to it — which happens only when another
// connection presents the session's id and password and closes it (an
// operator's kill racing the client's reconnect), or, in an ensemble, when the
// close is applied by another server first — is seen by other clients at
// about the same moment as the holder's connection drops, sometimes up to a
// millisecond earlier. A real expiry is safe by a wide margin: a client that
// has not heard from the servers for 2/3 of the session timeout is already
// Suspended when they expire it at the full timeout. A paused process (GC,
// SIGSTOP) learns nothing until it runs again; only fencing tokens protect the
// resource from it.
//
// # Silence
//
// The manager does not wait for go-zookeeper to notice a dead connection: it
// knows when it last sent a request that a server has answered since (the
// server heard from it then or later; what it receives otherwise proves
// nothing: a watch notification answers no request, and flows while the way
// to the server is cut). While the session is usable, no request answered
// for the read timeout (2/3 of the negotiated session timeout; go-zookeeper
// pings every 1/3 when idle) means Suspended at once — the
// loss signal of every hold — and the connection is dropped so that a new one
// is dialled at once. go-zookeeper's own detection can come much later (its
// sender blocked in a write to a stalled connection delays it by up to another
// read timeout, past the moment the server may expire the session).
//
// # Declaring Lost locally
//
// Lost is declared when a server reports the session expired, and also, without
// waiting to hear from an ensemble that may be unreachable, when the client has
// had no request answered by any server for one negotiated session timeout,
// less 1/50 of it (measured on the local monotonic clock from the sending of
// the last request answered). A server expires a session no earlier than one
// session timeout after it last heard from the client, which is no earlier
// than that sending; the 1/50 covers the client's own lateness (its timer,
// the signal to the holds). This assumes the client's and the server's clocks
// advance at the same rate. When Lost is declared the old connection is
// closed (ending the session on the server if it still existed) and a new
// session is established with the configured backoff. The manager never lets a
// connection silently replace an expired session behind its listeners, and a
// connection told that its session expired never dials again: the manager opens
// exactly one new session per loss.
//
// # Listeners
//
// Every listener sees every transition after it registered, in order, on a
// goroutine of its own: a slow listener delays only itself, never the
// connection, the loss signal or other listeners. Events queue without bound
// while a listener is busy.
//
// # TLS
//
// WithTLS connects to ZooKeeper's secureClientPort (a server with the Netty
// connection factory). The TLS handshake happens in the manager's own dialer,
// on top of the connection the dialer (WithDialer, or TCP) returns, and within
// the same connect timeout; everything above it — go-zookeeper, the silence
// detection, the pipelined calls — sees the plaintext protocol as without TLS.
// Every connection is a new handshake, so a reconnect verifies the server
// again and presents the client certificate again (a rotated certificate
// from GetClientCertificate is used from the next connection on). Each
// server of an ensemble is verified against the host of its own address
// unless the configuration names one (ServerName): give servers by the names
// (or IP addresses) their certificates carry. With client certificates,
// ZooKeeper's x509 provider authenticates the session as the certificate's
// subject, before any WithAuth credentials are added.
//
// A misconfiguration does not make Open fail fast (a server may be fixed
// while Open waits); when ctx ends, Open's error names each server's last
// failure: "no ZooKeeper answer; is it a TLS port?", "TLS handshake failed
// ... a plaintext port?", an unknown authority, an expired certificate, a
// client certificate the server refused. The errors wrap crypto/tls's and
// crypto/x509's, for errors.As.
//
// # Operations
//
// Do runs ZooKeeper operations against the current session, retrying only when
// the outcome is unknown because the connection failed, and never across a
// session boundary (it returns ErrLost instead).
package session
