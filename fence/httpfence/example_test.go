package httpfence_test

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/shepherdzk/shepherd/fence/httpfence"
)

// A service behind the middleware, and holders calling it with their
// tokens; the first calls again, late, and is refused with 409.
func Example() {
	fenced, err := httpfence.Middleware(httpfence.NewMemoryStore())
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(fenced(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resource, token, _ := httpfence.FromContext(r.Context())
		fmt.Printf("handled for %s, token %d\n", resource, token)
	})))
	defer srv.Close()

	call := func(token int64) {
		client := &http.Client{Transport: httpfence.NewTransport(nil, "/jobs/billing/lock", token)}
		resp, err := client.Post(srv.URL, "text/plain", nil)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		if err := httpfence.CheckResponse(resp); err != nil {
			fmt.Println(resp.Status, errors.Is(err, httpfence.ErrStale), err)
		}
	}
	call(4294967301)
	call(4294967305)
	call(4294967301)
	// Output:
	// handled for /jobs/billing/lock, token 4294967301
	// handled for /jobs/billing/lock, token 4294967305
	// 409 Conflict true httpfence: stale token 4294967301 for "/jobs/billing/lock": the service has seen token 4294967305 (a newer holder called since)
}
