package httpfence

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Store keeps, per resource, the highest token a service has seen, and
// keeps a resource to one request at a time. MemoryStore keeps it for one
// process, SQLStore in a database for every process of a service.
type Store interface {
	// Enter admits token for resource if it is at least the highest token
	// seen for resource, raising that to token, and holds resource for the
	// caller until it calls leave: no other Enter of resource returns
	// before then. A stale token is refused with a *StaleError (matching
	// ErrStale) and nothing held. Enter returns ctx's error if ctx ends
	// while it waits.
	Enter(ctx context.Context, resource string, token int64) (leave func(), err error)
}

// Option configures Middleware.
type Option func(*config)

type config struct {
	allowUnfenced bool
}

// AllowUnfenced lets requests that carry neither fence header through,
// unchecked (reads, or clients that hold nothing): the default refuses
// them with 400. A request with one header only, or one that does not
// parse, is refused either way.
func AllowUnfenced() Option { return func(c *config) { c.allowUnfenced = true } }

// Middleware returns a middleware that admits a request only if its token
// (TokenHeader) is at least the highest the store has seen for its
// resource (ResourceHeader), and runs the handler while holding the
// resource in the store, so that the requests of one resource never
// overlap. Its answers of its own, each with a one-line text body:
//
//   - 409 Conflict for a stale token, with NewerHeader: the highest token
//     seen. (409, not 412: 412 answers the conditional headers of RFC 9110,
//     which caches and proxies interpret; a stale token is a conflict with
//     the resource's state, which a newer holder has changed.)
//   - 400 Bad Request for a request without the headers (unless
//     AllowUnfenced), with one of them only, or one that does not parse.
//   - 503 Service Unavailable when the store fails (its database is down),
//     or the request's context ends while it waits for its turn.
//
// The handler finds the admitted resource and token with FromContext. A
// nil store is an error matching ErrInvalid.
func Middleware(store Store, opts ...Option) (func(http.Handler) http.Handler, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	}
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			resource, token, err := Parse(r.Header)
			if errors.Is(err, ErrUnfenced) && cfg.allowUnfenced {
				next.ServeHTTP(w, r)
				return
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			leave, err := store.Enter(r.Context(), resource, token)
			var stale *StaleError
			switch {
			case errors.As(err, &stale):
				w.Header().Set(NewerHeader, strconv.FormatInt(stale.Newer, 10))
				http.Error(w, stale.Error(), http.StatusConflict)
				return
			case err != nil:
				// The store's error (a database's) is not the client's to read.
				http.Error(w, fmt.Sprintf("httpfence: cannot check the token for %q now", resource), http.StatusServiceUnavailable)
				return
			}
			defer leave()
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), fenceKey{}, admitted{resource, token})))
		})
	}, nil
}
