package httpfence

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The headers of a fenced request, and of its refusal.
const (
	// ResourceHeader names what the hold protects: the hold's path, e.g.
	// "/jobs/billing/lock" (SHEPHERD_PATH in the CLI).
	ResourceHeader = "Shepherd-Fence-Resource"
	// TokenHeader is the hold's fencing token, in decimal (SHEPHERD_TOKEN).
	TokenHeader = "Shepherd-Fence-Token"
	// NewerHeader, on a 409 refusal, is the highest token the service has
	// seen for the resource.
	NewerHeader = "Shepherd-Fence-Newer"
)

// Errors, matched with errors.Is.
var (
	// ErrStale: the service has seen a higher token for the resource (a
	// newer holder has called it). The error is a *StaleError.
	ErrStale = errors.New("httpfence: stale token")
	// ErrInvalid: a nil store, an empty resource or one a header cannot
	// carry, a negative token, or a request whose fence headers do not
	// parse.
	ErrInvalid = errors.New("httpfence: invalid fence")
	// ErrUnfenced: a request without the fence's headers.
	ErrUnfenced = errors.New("httpfence: request not fenced")
)

// StaleError is a stale token's refusal: it matches ErrStale.
type StaleError struct {
	Resource string // the resource named by the request
	Token    int64  // the token refused
	Newer    int64  // the highest token seen for Resource
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("httpfence: stale token %d for %q: the service has seen token %d (a newer holder called since)",
		e.Token, e.Resource, e.Newer)
}

// Unwrap makes a StaleError match ErrStale.
func (e *StaleError) Unwrap() error { return ErrStale }

// Transport is an http.RoundTripper that sends every request with the
// fence's headers: Resource and Token, a hold's. Make one per hold (a new
// holder has a new token). Its fields must not change while it is in use.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base     http.RoundTripper
	Resource string
	Token    int64
}

// NewTransport returns a Transport of resource and token over base (nil:
// http.DefaultTransport). token is the hold's (a mutex's or lease's Token,
// an election's Term), taken as its type is.
func NewTransport[T ~int64](base http.RoundTripper, resource string, token T) *Transport {
	return &Transport{Base: base, Resource: resource, Token: int64(token)}
}

// RoundTrip sends a copy of r with the fence's headers set. An invalid
// Resource or Token is an error matching ErrInvalid, and nothing is sent.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := validate(t.Resource, t.Token); err != nil {
		if r.Body != nil {
			r.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, err
	}
	r2 := r.Clone(r.Context())
	SetHeaders(r2.Header, t.Resource, t.Token)
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r2)
}

// SetHeaders sets the fence's headers of one request in h.
func SetHeaders[T ~int64](h http.Header, resource string, token T) {
	h.Set(ResourceHeader, resource)
	h.Set(TokenHeader, strconv.FormatInt(int64(token), 10))
}

func validate(resource string, token int64) error {
	switch {
	case resource == "":
		return fmt.Errorf("%w: empty resource", ErrInvalid)
	case strings.IndexFunc(resource, func(c rune) bool { return c < ' ' || c == 0x7f }) >= 0:
		return fmt.Errorf("%w: resource %q has a control character", ErrInvalid, resource)
	case strings.TrimSpace(resource) != resource:
		return fmt.Errorf("%w: resource %q has leading or trailing blanks, which a header loses", ErrInvalid, resource)
	case token < 0:
		return fmt.Errorf("%w: negative token %d for %q", ErrInvalid, token, resource)
	}
	return nil
}

// Parse reads the fence's headers of a request: an error matching
// ErrUnfenced when both are missing, ErrInvalid when one is missing or
// does not parse.
func Parse(h http.Header) (resource string, token int64, err error) {
	resource, tok := h.Get(ResourceHeader), h.Get(TokenHeader)
	if resource == "" && tok == "" {
		return "", 0, fmt.Errorf("%w: no %s and %s headers", ErrUnfenced, ResourceHeader, TokenHeader)
	}
	if tok == "" {
		return "", 0, fmt.Errorf("%w: %s without %s", ErrInvalid, ResourceHeader, TokenHeader)
	}
	token, err = strconv.ParseInt(tok, 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %s %q is not a decimal token", ErrInvalid, TokenHeader, tok)
	}
	if err := validate(resource, token); err != nil {
		return "", 0, err
	}
	return resource, token, nil
}

// CheckResponse returns the *StaleError of a response that is the fence's
// refusal of a stale token (409 with NewerHeader), else nil. resp.Request
// (set by http.Client) names the token refused.
func CheckResponse(resp *http.Response) error {
	if resp == nil || resp.StatusCode != http.StatusConflict {
		return nil
	}
	newer, err := strconv.ParseInt(resp.Header.Get(NewerHeader), 10, 64)
	if err != nil {
		return nil // a conflict of the service's own
	}
	e := &StaleError{Newer: newer}
	if resp.Request != nil {
		e.Resource = resp.Request.Header.Get(ResourceHeader)
		e.Token, _ = strconv.ParseInt(resp.Request.Header.Get(TokenHeader), 10, 64)
	}
	return e
}

// fenceKey is the request context's key of what the middleware admitted.
type fenceKey struct{}

type admitted struct {
	resource string
	token    int64
}

// FromContext returns the resource and token the middleware admitted for
// the request of ctx; ok is false for a request that passed unfenced
// (AllowUnfenced) or did not go through the middleware.
func FromContext(ctx context.Context) (resource string, token int64, ok bool) {
	a, ok := ctx.Value(fenceKey{}).(admitted)
	return a.resource, a.token, ok
}
