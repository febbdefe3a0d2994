// Command zkbench runs shepherd's benchmark suite: shepherd against Curator
// (Java), Kazoo (Python), go-zookeeper's zk.Lock and a minimal raw lock (the
// floor), on one ZooKeeper that it starts on loopback, in one run.
//
//	go run ./bench/cmd/zkbench [-quick] [-ensemble] [-disk] [-repeat 3]
//	    [-json out.jsonl] [-only W1,W2] [-peers raw,curator]
//
// Peers run one at a time, interleaved: in every repetition each workload
// runs on each peer in turn. Server requests and watch notifications per
// operation come from ZooKeeper's own counters (mntr) around each run. The
// table shows medians with [min – max] over the repetitions; raw results go
// to -json as one line per run. See bench/doc.go for the workloads.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/shepherdzk/shepherd/bench"
	"github.com/shepherdzk/shepherd/bench/internal/gopeers"
	"github.com/shepherdzk/shepherd/zktest"
)

// goLibraries are the in-process peers, in table order.
func goLibraries() []gopeers.Library {
	return []gopeers.Library{
		// shepherd first: the ratio column divides by its medians.
		gopeers.Shepherd(),
		gopeers.ShepherdRun(),
		gopeers.ShepherdReturn(),
		gopeers.Raw(),
		gopeers.GoZookeeper(),
	}
}

const (
	shepherdPeer = "shepherd"
	floorPeer    = "raw" // the ratio baseline until shepherd is registered
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "zkbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	quick := flag.Bool("quick", false, "fewer cycles and repetitions (about a minute)")
	ensemble := flag.Bool("ensemble", false, "a 3-node ensemble instead of a standalone server")
	disk := flag.Bool("disk", false, "keep ZooKeeper's data on disk (a directory under $TMPDIR) instead of tmpfs")
	repeat := flag.Int("repeat", 0, "repetitions (default 3, or 1 with -quick)")
	jsonOut := flag.String("json", "", "write one JSON line per run to this file")
	only := flag.String("only", "", "comma-separated workloads to run (default all: W1,W2,W3,W4,W5,W6,W7-10,W7-1000,W7-10000)")
	peerList := flag.String("peers", "", "comma-separated peers to run (default all available)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the runner (the Go peers run in it) to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	t0 := time.Now()
	if *repeat == 0 {
		*repeat = 3
		if *quick {
			*repeat = 1
		}
	}
	workloads := bench.Workloads
	if *only != "" {
		workloads = nil
		for _, w := range strings.Split(*only, ",") {
			w = strings.ToUpper(strings.TrimSpace(w))
			if !slices.Contains(bench.Workloads, w) {
				return fmt.Errorf("-only: unknown workload %q (have %v)", w, bench.Workloads)
			}
			workloads = append(workloads, w)
		}
	}
	known := []string{"curator", "kazoo"}
	for _, lib := range goLibraries() {
		known = append(known, lib.Name)
	}
	var wanted []string
	if *peerList != "" {
		wanted = strings.Split(*peerList, ",")
		for _, p := range wanted {
			if !slices.Contains(known, p) {
				return fmt.Errorf("-peers: unknown peer %q (have %v)", p, known)
			}
		}
	}
	wantPeer := func(name string) bool { return wanted == nil || slices.Contains(wanted, name) }

	// The subprocess peers' stderr: kept for a look after the run, replaced
	// by the next one.
	logDir := filepath.Join(bench.CacheDir(), "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"curator.log", "kazoo.log"} {
		_ = os.Remove(filepath.Join(logDir, f))
	}

	// Peers first: compiling the Java driver should not run beside a server.
	var peers []bench.Peer
	var notes []string
	for _, lib := range goLibraries() {
		if wantPeer(lib.Name) {
			peers = append(peers, gopeers.Peer(lib))
		}
	}
	type ext struct {
		name string
		make func(context.Context, string) (*bench.Subprocess, error)
	}
	for _, e := range []ext{{"curator", bench.NewCurator}, {"kazoo", bench.NewKazoo}} {
		if !wantPeer(e.name) {
			continue
		}
		p, err := e.make(ctx, logDir)
		if err == nil {
			err = p.Start(ctx)
		}
		switch {
		case errors.Is(err, bench.ErrUnavailable):
			notes = append(notes, "skipped: "+err.Error())
			continue
		case err != nil:
			return err
		}
		defer p.Close()
		notes = append(notes, fmt.Sprintf("%s %s (driver log: %s)", p.Name(), p.Version(), p.LogPath()))
		peers = append(peers, p)
	}
	if len(peers) == 0 {
		return errors.New("no peer to run")
	}

	opts := []zktest.Option{zktest.WithFullJIT(), zktest.WithHeapMB(256)}
	label := "standalone"
	size := 1
	if *ensemble {
		label, size = "3-node ensemble", 3
	}
	if *disk {
		dir, err := os.MkdirTemp("", "zkbench-data-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		opts = append(opts, zktest.WithDataDir(dir))
		label += ", data on disk with fsync (" + dir + ")"
	} else {
		label += ", data on tmpfs"
	}
	fmt.Fprintf(os.Stderr, "zkbench: starting ZooKeeper (%s) ...\n", label)
	cluster, err := zktest.StartCluster(ctx, size, opts...)
	if err != nil {
		return err
	}
	defer cluster.Close()
	if *disk {
		if err := forceSync(ctx, cluster); err != nil {
			return err
		}
	}

	var jsonFile *os.File
	if *jsonOut != "" {
		if jsonFile, err = os.Create(*jsonOut); err != nil {
			return err
		}
		defer jsonFile.Close()
	}
	cfg := bench.Config{
		Repeat:    *repeat,
		Workloads: workloads,
		Params:    bench.Params(*quick),
		Warmup:    true,
		Label:     label,
		Progress:  os.Stderr,
	}
	if jsonFile != nil {
		cfg.JSON = jsonFile
	}
	runner, err := bench.NewRunner(ctx, cluster, cfg)
	if err != nil {
		return err
	}
	recs, err := runner.Run(ctx, peers)
	if err != nil && len(recs) == 0 {
		return err
	}

	names := make([]string, len(peers))
	baseline := floorPeer
	for i, p := range peers {
		names[i] = p.Name()
		if p.Name() == shepherdPeer {
			baseline = shepherdPeer
		}
	}
	mode := "full"
	if *quick {
		mode = "quick"
	}
	fmt.Printf("zkbench (%s): ZooKeeper 3.8 %s at %s; %d repetition(s); %s, %d CPUs\n",
		mode, label, cluster.ConnectString(), *repeat, runtime.Version(), runtime.NumCPU())
	for _, n := range notes {
		fmt.Printf("  %s\n", n)
	}
	if baseline != shepherdPeer {
		fmt.Printf("  ratio column: shepherd is not registered yet, so it is raw / peer (the floor's median over the peer's)\n")
	}
	bench.WriteTable(os.Stdout, recs, names, baseline)
	fmt.Printf("\ntotal %v", time.Since(t0).Round(100*time.Millisecond))
	if jsonFile != nil {
		fmt.Printf("; raw results: %s", *jsonOut)
	}
	fmt.Println()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Error != "" {
			keepServerLogs(cluster)
			return errors.New("some runs failed (see the table)")
		}
	}
	return nil
}

// keepServerLogs copies each server's log out of its directory (removed
// with the cluster) into the bench's cache directory, and says whether the
// server still runs and how its log ends: a run that failed because the
// server stopped answering is diagnosed from there.
func keepServerLogs(cluster *zktest.Cluster) {
	dir := filepath.Join(bench.CacheDir(), "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "zkbench: keep the server logs:", err)
		return
	}
	stamp := time.Now().Format("20060102-150405")
	for i := range cluster.Size() {
		b, err := os.ReadFile(cluster.LogPath(i))
		if err != nil {
			fmt.Fprintln(os.Stderr, "zkbench: read server log:", err)
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("zookeeper-%s-node%d.log", stamp, i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "zkbench: keep server log:", err)
			continue
		}
		fmt.Fprintf(os.Stderr, "zkbench: server %d running: %v; its log: %s; it ends:\n%s\n", i, cluster.Running(i), p, cluster.LogTail(i, 20))
	}
}

// forceSync turns fsync back on: zktest writes forceSync=no into every
// node's zoo.cfg (right for tests, wrong for a disk benchmark), and a
// -Dzookeeper.forceSync flag cannot override it (ZooKeeper copies unknown
// zoo.cfg keys into system properties after the JVM starts). So rewrite the
// config zktest wrote and restart each node.
// TODO(zktest): replace with a zktest option (e.g. WithForceSync) when there is one.
func forceSync(ctx context.Context, c *zktest.Cluster) error {
	for i := range c.Size() {
		cfg := filepath.Join(c.Dir(), fmt.Sprintf("node%d", i), "zoo.cfg")
		b, err := os.ReadFile(cfg)
		if err != nil {
			return fmt.Errorf("-disk: zktest's layout changed? %w", err)
		}
		if !bytes.Contains(b, []byte("forceSync=no\n")) {
			return fmt.Errorf("-disk: %s has no forceSync=no line; zktest changed", cfg)
		}
		b = bytes.Replace(b, []byte("forceSync=no\n"), []byte("forceSync=yes\n"), 1)
		if err := os.WriteFile(cfg, b, 0o644); err != nil {
			return err
		}
		if err := c.Restart(ctx, i); err != nil {
			return err
		}
	}
	return c.WaitServing(ctx)
}
