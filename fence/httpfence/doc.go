// Package httpfence fences a holder's calls to an HTTP service with the
// hold's fencing token: the client sends the hold's path and token in two
// headers, and the service refuses a token lower than the highest it has
// seen for that path, so that a holder that was replaced (paused past its
// session, partitioned) cannot act through the service after its
// successor has.
//
// The client side is a Transport (an http.RoundTripper) made per hold:
//
//	client := &http.Client{Transport: httpfence.NewTransport(nil, "/jobs/billing/lock", tok)}
//	resp, err := client.Post(url, "application/json", body)
//	// resp.StatusCode 409 (httpfence.CheckResponse: ErrStale): a newer holder has called; stop
//
// or SetHeaders on one request. The service wraps its handlers in
// Middleware with a Store that keeps the highest token per resource:
// NewMemoryStore for a service of one process, NewSQLStore (the table of
// package sqlfence, in PostgreSQL or SQLite) for one of several processes.
//
//	store := httpfence.NewMemoryStore()
//	fenced, err := httpfence.Middleware(store)
//	mux.Handle("POST /charge", fenced(chargeHandler))
//
// # The headers
//
//	Shepherd-Fence-Resource: /jobs/billing/lock
//	Shepherd-Fence-Token: 4294967311
//
// The resource is what the hold protects, named by the hold's path (the
// same for every holder; SHEPHERD_PATH in the CLI); the token is the hold's
// (a mutex's or lease's Token, an election's Term, a schedule Tick's Term;
// SHEPHERD_TOKEN or SHEPHERD_TERM in the CLI), in decimal. Two headers
// rather than one structured value, so that a shell script sets them with
// curl -H, and neither needs quoting. A refusal of a stale token is 409
// Conflict with Shepherd-Fence-Newer, the highest token seen, and a
// one-line text body naming both; a request without the headers, or with
// headers that do not parse, is 400 (AllowUnfenced lets requests without
// either header through unchecked); a store that fails is 503.
//
// # What is guaranteed
//
// Once the store has admitted a token for a resource, it refuses every
// lower token for it; the same token again (the same holder) is admitted.
// The middleware holds the resource in the store while the handler runs:
// two requests of one resource never overlap (the second waits), so the
// effects of a request admitted before a newer holder's came in are done
// before that one starts. With SQLStore this holds across the processes
// sharing the database (the fence's row lock), and the raise is committed
// before the handler runs.
//
// Which token orders what, for every kind of hold, is in the doc of
// package fence.
//
// # What is not guaranteed
//
// A stale holder is refused only once a newer holder's request has reached
// the service: before that, nothing in the service says it was replaced.
// A MemoryStore forgets on restart: until the newer holder calls again, a
// restarted service admits a stale token. Requests of one resource are
// serialised: a slow handler delays the next request of its resource, and
// a request waiting for its turn waits until its context ends (then 503).
// The fence covers what the handler does while it runs: work it starts in
// the background and leaves running is not ordered by it.
package httpfence
