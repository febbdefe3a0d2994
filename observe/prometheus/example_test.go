package prometheus_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shepherdzk/shepherd/mutex"
	promobs "github.com/shepherdzk/shepherd/observe/prometheus"
	"github.com/shepherdzk/shepherd/session"
)

// The adapter turns a session's and its recipes' events into metrics in a
// registry of yours (serve it with promhttp.HandlerFor as usual).
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// zk is this package's test server (prometheus_test.go): use your
	// ensemble's addresses.
	servers := zk.Servers()

	reg := prometheus.NewRegistry()
	obs, err := promobs.New(reg)
	if err != nil {
		log.Fatal(err)
	}
	sess, err := session.Open(ctx, servers, session.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	m, err := mutex.New(sess, "/jobs/metrics-example/lock")
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	// What a scrape sees while the lock is held.
	mfs, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "shepherd_holds" {
			continue
		}
		for _, s := range mf.GetMetric() {
			fmt.Printf("%s{recipe=%q} %v\n", mf.GetName(), s.GetLabel()[0].GetValue(), s.GetGauge().GetValue())
		}
	}
	if err := m.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// shepherd_holds{recipe="mutex"} 1
}
