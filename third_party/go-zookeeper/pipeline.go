package zk

// This file is shepherd's addition to go-zookeeper (see PATCHES.md).

// opCreate2 is create, answered with the new node's Stat (ZooKeeper 3.5+).
const opCreate2 = 15

type create2Response struct {
	Path string
	Stat Stat
}

// CreateListResult is what CreateThenChildren returns.
type CreateListResult struct {
	Path string // the created node
	Stat Stat   // its Stat (Czxid: the zxid that created it)
	Err  error  // the create's error; nothing else is meaningful when set

	Children    []string // the parent's children, listed after the create
	ChildrenErr error
}

// CreateThenChildren sends a create (create2: the answer carries the node's
// Stat) of path and a getChildren of parent back to back, without waiting for
// the create's answer in between, and returns both answers: two requests in
// one round trip. The server applies a session's requests in the order they
// were sent, so when the create succeeded and both went out on the same
// connection, Children includes the created node. If the connection changed
// between the two, it may not: a caller must check before relying on it.
func (c *Conn) CreateThenChildren(path string, data []byte, flags int32, acl []ACL, parent string) CreateListResult {
	fail := func(err error) CreateListResult { return CreateListResult{Err: err, ChildrenErr: err} }
	createMode, err := parseCreateMode(flags)
	if err != nil {
		return fail(err)
	}
	if err := validatePath(path, createMode.isSequential); err != nil {
		return fail(err)
	}
	if createMode.isTTL {
		return fail(ErrInvalidFlags)
	}
	if err := validatePath(parent, false); err != nil {
		return fail(err)
	}
	cres := &create2Response{}
	lres := &getChildren2Response{}
	// Both are queued by this goroutine, in this order: sendLoop writes them
	// in this order.
	crecv := c.queueRequest(opCreate2, &CreateRequest{path, data, acl, createMode.flag}, cres, nil)
	lrecv := c.queueRequest(opGetChildren2, &getChildren2Request{Path: parent, Watch: false}, lres, nil)
	var r CreateListResult
	r.Err = c.await(crecv)
	r.ChildrenErr = c.await(lrecv)
	if r.Err == nil {
		r.Path, r.Stat = cres.Path, cres.Stat
		if r.ChildrenErr == nil {
			r.Children = lres.Children
		}
	}
	return r
}

// await is request's wait for an answer.
func (c *Conn) await(recv <-chan response) error {
	select {
	case r := <-recv:
		return r.err
	case <-c.shouldQuit:
		return ErrConnectionClosed
	}
}
