package zktest

import (
	"fmt"
	"time"

	"github.com/shepherdzk/shepherd/internal/wire/zkwire"
)

// Credentials are what a client needs to attach to an existing ZooKeeper
// session: its ID and password, as the server sent them in the session's
// ConnectResponse, and the session timeout the server negotiated. A Tap or a
// Proxy records them; ExpireSession and DisconnectSession use them.
//
// The password is a secret of the session: String and GoString never print it.
type Credentials struct {
	SessionID int64         // the session's ID, as go-zookeeper's Conn.SessionID reports it
	Password  []byte        // the session's password (16 bytes from ZooKeeper)
	Timeout   time.Duration // the session timeout the server negotiated
}

// String describes the credentials without the password.
func (c Credentials) String() string {
	return fmt.Sprintf("session 0x%x (timeout %v, password %d bytes)", c.SessionID, c.Timeout, len(c.Password))
}

// GoString is String, so that %#v does not print the password either.
func (c Credentials) GoString() string { return "zktest.Credentials{" + c.String() + "}" }

// clone returns c with a password the caller may keep.
func (c Credentials) clone() Credentials {
	c.Password = append([]byte(nil), c.Password...)
	return c
}

// maxReplyFrame bounds the replies ExpireSession reads.
const maxReplyFrame = 64 << 10

// closeSessionXid is the xid of ExpireSession's closeSession request.
const closeSessionXid int32 = 1

// parseConnectResponse decodes the body of a ConnectResponse frame (without
// its length prefix) into the session's Credentials, with a password of
// their own. A session ID of 0 is valid: it is how a server refuses to
// reattach a session (expired, or a wrong password).
func parseConnectResponse(body []byte) (Credentials, error) {
	r, err := zkwire.ParseConnectResponse(body)
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{
		SessionID: r.SessionID,
		Password:  append([]byte(nil), r.Password...),
		Timeout:   r.Timeout,
	}, nil
}

// connectRequest builds a length-prefixed ConnectRequest that attaches to
// cred's session (see zkwire.ConnectRequest).
func connectRequest(cred Credentials, lastZxidSeen int64) []byte {
	return zkwire.ConnectRequest{
		LastZxidSeen: lastZxidSeen,
		Timeout:      cred.Timeout,
		SessionID:    cred.SessionID,
		Password:     cred.Password,
	}.Encode()
}
