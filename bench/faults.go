package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shepherdzk/shepherd/zktest"
)

// faultService gives a subprocess peer's W6 run a fault proxy per session and
// a loopback HTTP endpoint to stall and heal them: the peer decides when its
// leader crashes and measures on its own clock.
type faultService struct {
	proxies []*zktest.Proxy
	srv     *http.Server
	done    chan struct{}
}

// startFaults starts n proxies in front of spec's servers and the endpoint,
// and fills in spec.Connects and spec.FaultURL.
func startFaults(spec *Spec, n int) (*faultService, error) {
	f := &faultService{done: make(chan struct{})}
	var connects []string
	for range n {
		p, err := zktest.NewProxy(spec.Servers()...)
		if err != nil {
			f.close()
			return nil, err
		}
		f.proxies = append(f.proxies, p)
		connects = append(connects, strings.Join(p.Addrs(), ","))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.close()
		return nil, err
	}
	mux := http.NewServeMux()
	act := func(do func(*zktest.Proxy)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			i, err := strconv.Atoi(r.URL.Query().Get("i"))
			if err != nil || i < 0 || i >= len(f.proxies) {
				http.Error(w, "bad session index", http.StatusBadRequest)
				return
			}
			do(f.proxies[i])
			fmt.Fprintln(w, "ok")
		}
	}
	mux.HandleFunc("/stall", act((*zktest.Proxy).Stall))
	mux.HandleFunc("/heal", act((*zktest.Proxy).Heal))
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(f.done)
		if err := f.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "bench: fault endpoint:", err)
		}
	}()
	spec.Connects = strings.Join(connects, ";")
	spec.FaultURL = "http://" + ln.Addr().String()
	return f, nil
}

func (f *faultService) close() {
	if f.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = f.srv.Shutdown(ctx)
		cancel()
		<-f.done
	}
	for _, p := range f.proxies {
		_ = p.Close()
	}
}
