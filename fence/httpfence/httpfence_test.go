package httpfence_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/fence/httpfence"
)

// The Transport sends the two headers on a copy of each request (the
// caller's is untouched); a bad resource or token sends nothing.
func TestTransport(t *testing.T) {
	type token int64 // as hold.Token is declared
	var hits atomic.Int64
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		got = r.Header.Clone()
	}))
	defer srv.Close()
	client := &http.Client{Transport: httpfence.NewTransport(nil, "/jobs/a lock", token(4294967311))}
	req, err := http.NewRequestWithContext(ctxT(t, 10*time.Second), http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "/jobs/a lock", got.Get(httpfence.ResourceHeader))
	require.Equal(t, "4294967311", got.Get(httpfence.TokenHeader))
	require.Empty(t, req.Header.Get(httpfence.TokenHeader), "the caller's request is not modified")

	for _, tr := range []*httpfence.Transport{
		{Resource: "", Token: 1},
		{Resource: "/a\nb", Token: 1},
		{Resource: " /a", Token: 1},
		{Resource: "/a", Token: -1},
	} {
		_, err := (&http.Client{Transport: tr}).Get(srv.URL)
		require.ErrorIs(t, err, httpfence.ErrInvalid, "%+v", tr)
	}
	require.EqualValues(t, 1, hits.Load(), "an invalid fence sends nothing")
}

// The middleware admits a first token, the same again and a higher one;
// refuses a lower one with 409, the newer token in a header and the body;
// keeps resources apart; and hands the handler what it admitted.
func TestMiddleware(t *testing.T) {
	var seen []string
	srv := server(t, httpfence.NewMemoryStore(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, tok, ok := httpfence.FromContext(r.Context())
		require.True(t, ok)
		seen = append(seen, res+"@"+strconv.FormatInt(tok, 10))
	}))
	for _, tok := range []int64{5, 5, 7} {
		code, body, _ := call(t, srv.URL, "/r", tok)
		require.Equal(t, http.StatusOK, code, body)
	}
	code, body, resp := call(t, srv.URL, "/r", 6)
	require.Equal(t, http.StatusConflict, code)
	require.Equal(t, "7", resp.Header.Get(httpfence.NewerHeader))
	require.Equal(t, "httpfence: stale token 6 for \"/r\": the service has seen token 7 (a newer holder called since)\n", body)
	err := httpfence.CheckResponse(resp)
	require.ErrorIs(t, err, httpfence.ErrStale)
	var se *httpfence.StaleError
	require.ErrorAs(t, err, &se)
	require.Equal(t, httpfence.StaleError{Resource: "/r", Token: 6, Newer: 7}, *se)

	code, _, _ = call(t, srv.URL, "/other", 1)
	require.Equal(t, http.StatusOK, code, "another resource is fenced apart")
	require.Equal(t, []string{"/r@5", "/r@5", "/r@7", "/other@1"}, seen)
}

// Requests without the headers are refused with 400, or let through with
// AllowUnfenced; a header alone, or a token that does not parse, is 400
// either way.
func TestMiddlewareBadRequests(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _, fenced := httpfence.FromContext(r.Context())
		w.Header().Set("Fenced", strconv.FormatBool(fenced))
	})
	strict := server(t, httpfence.NewMemoryStore(), ok)
	lax := server(t, httpfence.NewMemoryStore(), ok, httpfence.AllowUnfenced())
	send := func(url string, h map[string]string) (int, string) {
		req, err := http.NewRequestWithContext(ctxT(t, 10*time.Second), http.MethodPost, url, nil)
		require.NoError(t, err)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Fenced")
	}
	code, _ := send(strict.URL, nil)
	require.Equal(t, http.StatusBadRequest, code)
	code, fenced := send(lax.URL, nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "false", fenced)
	for _, h := range []map[string]string{
		{httpfence.ResourceHeader: "/r"},
		{httpfence.TokenHeader: "5"},
		{httpfence.ResourceHeader: "/r", httpfence.TokenHeader: "five"},
		{httpfence.ResourceHeader: "/r", httpfence.TokenHeader: "-5"},
	} {
		for _, url := range []string{strict.URL, lax.URL} {
			code, _ := send(url, h)
			require.Equal(t, http.StatusBadRequest, code, "%v", h)
		}
	}
	code, fenced = send(lax.URL, map[string]string{httpfence.ResourceHeader: "/r", httpfence.TokenHeader: "5"})
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "true", fenced)

	_, err := httpfence.Middleware(nil)
	require.ErrorIs(t, err, httpfence.ErrInvalid)
	require.NoError(t, httpfence.CheckResponse(&http.Response{StatusCode: http.StatusConflict}),
		"a 409 of the service's own is not the fence's")
}

// A MemoryStore holds a resource from Enter to leave: another Enter of it
// waits (a ctx that has ended finds it held, deterministically), a stale
// one is refused once it has its turn, another resource is free.
func TestMemoryStoreTurns(t *testing.T) {
	var s httpfence.MemoryStore // the zero value is an empty store
	ctx := ctxT(t, 10*time.Second)
	leave, err := s.Enter(ctx, "/r", 5)
	require.NoError(t, err)
	ended, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Enter(ended, "/r", 7)
	require.ErrorIs(t, err, context.Canceled, "the resource is held")
	other, err := s.Enter(ctx, "/other", 1)
	require.NoError(t, err)
	other()

	got := make(chan error, 1)
	go func() {
		l, err := s.Enter(ctx, "/r", 7)
		if err == nil {
			l()
		}
		got <- err
	}()
	leave()
	leave() // a second call does nothing
	require.NoError(t, <-got)
	_, err = s.Enter(ctx, "/r", 6)
	require.ErrorIs(t, err, httpfence.ErrStale)
	_, err = s.Enter(ctx, "/r", -1)
	require.ErrorIs(t, err, httpfence.ErrInvalid)
}

// A store that fails answers 503, without its error in the body.
func TestMiddlewareStoreFails(t *testing.T) {
	srv := server(t, failing{}, http.NotFoundHandler())
	code, body, _ := call(t, srv.URL, "/r", 1)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.NotContains(t, body, "secret")
	require.True(t, strings.HasPrefix(body, "httpfence: cannot check the token for \"/r\""), body)
}

type failing struct{}

func (failing) Enter(context.Context, string, int64) (func(), error) {
	return nil, errors.New("secret: connection refused")
}
