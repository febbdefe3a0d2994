// Command zkbench runs shepherd's benchmark suite: shepherd against Curator
// (Java), Kazoo (Python), go-zookeeper's zk.Lock and a minimal raw lock (the
// floor), on one ZooKeeper that it starts on loopback, in one run.
//
//	go run ./bench/cmd/zkbench [-quick] [-ensemble] [-disk] [-repeat 3]
//	    [-json out.jsonl] [-only W1,W2] [-peers raw,curator]
//
// W8 (a rolling restart) needs an ensemble: without -ensemble it runs on a
// 3-node one of its own, started once the standalone server is closed. It
// runs once whatever -repeat says (with -quick: one round of restarts, else
// two), with shepherd twice: "shepherd" (the default, StopOnDisconnect) and
// "shepherd-pause" (session.PauseOnDisconnect). W8 alone:
//
//	go run ./bench/cmd/zkbench -only W8
//
// -tls runs the selected workloads (W8 aside) a second time, in the same run,
// on a TLS-only server (zktest.WithTLS: mutual TLS) of the same shape, for
// the Go peers only: Curator's and Kazoo's TLS setup (a JVM keystore and
// truststore, a Python ssl context) is not wired into their drivers. A second
// table shows the TLS runs, and a third each Go peer's TLS medians next to its
// plaintext ones:
//
//	go run ./bench/cmd/zkbench -only W1,W4 -tls
//
// Peers run one at a time, interleaved: in every repetition each workload
// runs on each peer in turn (W2 three times over: its spread from run to run
// is wider than the peers' differences). Server requests and watch notifications per
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
		gopeers.ShepherdPause(),
		gopeers.ShepherdPriority(),
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
	only := flag.String("only", "", "comma-separated workloads to run (default all: W1,W2,W3,W4,W5,W6,W7-10,W7-1000,W7-10000,W8,W9)")
	peerList := flag.String("peers", "", "comma-separated peers to run (default all available)")
	withTLS := flag.Bool("tls", false, "run the workloads (W8 aside) again on a TLS-only server, Go peers only, and compare")
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
	goPeers := slices.Clone(peers) // the in-process peers: -tls runs these
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

	// 1 GB: 10,000 sessions of W7 after the other workloads ran 256 MB
	// out once, and 512 MB once (2026-11-29: in shepherd's preparation of
	// W7-10000, whose 10,000 waiters each list the 10,000-node line twice,
	// its check of the path and its entry, on 200 connections at once).
	opts := []zktest.Option{zktest.WithFullJIT(), zktest.WithHeapMB(1024)}
	var dataDir string
	if *disk {
		dir, err := os.MkdirTemp("", "zkbench-data-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dataDir = dir
		opts = append(opts, zktest.WithDataDir(dir))
	}
	describe := func(size int, overTLS bool) string {
		label := "standalone"
		if size > 1 {
			label = fmt.Sprintf("%d-node ensemble", size)
		}
		if *disk {
			label += ", data on disk with fsync (" + dataDir + ")"
		} else {
			label += ", data on tmpfs"
		}
		if overTLS {
			label += ", TLS"
		}
		return label
	}
	startCluster := func(size int, overTLS bool) (*zktest.Cluster, error) {
		fmt.Fprintf(os.Stderr, "zkbench: starting ZooKeeper (%s) ...\n", describe(size, overTLS))
		o := opts
		if overTLS {
			o = append(slices.Clone(opts), zktest.WithTLS(zktest.TLSConfig{}))
		}
		if *disk && (size != mainSize(*ensemble) || overTLS) {
			// A second cluster gets a data directory of its own.
			dir, err := os.MkdirTemp(dataDir, "roll-")
			if err != nil {
				return nil, err
			}
			o = append(slices.Clone(o), zktest.WithDataDir(dir))
		}
		cluster, err := zktest.StartCluster(ctx, size, o...)
		if err != nil {
			return nil, err
		}
		if *disk {
			if err := forceSync(ctx, cluster); err != nil {
				cluster.Close()
				return nil, err
			}
		}
		return cluster, nil
	}

	var jsonFile *os.File
	if *jsonOut != "" {
		var err error
		if jsonFile, err = os.Create(*jsonOut); err != nil {
			return err
		}
		defer jsonFile.Close()
	}
	// W2's spread from run to run (±30% on 2 cores) is wider than the
	// peers' differences: three passes a repetition (one with -quick).
	passes := map[string]int{bench.W2: 3}
	if *quick {
		passes = nil
	}
	config := func(label string, workloads []string) bench.Config {
		cfg := bench.Config{
			Repeat:    *repeat,
			Workloads: workloads,
			Params:    bench.Params(*quick),
			Warmup:    true,
			Passes:    passes,
			Label:     label,
			Progress:  os.Stderr,
		}
		if jsonFile != nil {
			cfg.JSON = jsonFile
		}
		return cfg
	}

	// W8 (a rolling restart) needs an ensemble: without -ensemble it runs
	// on a 3-node one of its own, started once the standalone server is
	// gone; once in any case (a roll takes about 15 s per peer, and what
	// it measures is counted per run, not a latency to take medians of).
	var rest []string
	roll := false
	for _, w := range workloads {
		if w == bench.W8 {
			roll = true
		} else {
			rest = append(rest, w)
		}
	}
	var (
		recs     []bench.Record
		tlsRecs  []bench.Record // -tls: the Go peers' runs on the TLS-only server
		runErr   error
		setups   []string
		failedOn []*zktest.Cluster
	)
	runOn := func(cluster *zktest.Cluster, cfg bench.Config, peers []bench.Peer, into *[]bench.Record) error {
		runner, err := bench.NewRunner(ctx, cluster, cfg)
		if err != nil {
			return err
		}
		rs, err := runner.Run(ctx, peers)
		*into = append(*into, rs...)
		setups = append(setups, fmt.Sprintf("%s at %s: %s, %d repetition(s)",
			strings.Join(cfg.Workloads, ","), cluster.ConnectString(), cfg.Label, cfg.Repeat))
		for _, r := range rs {
			if r.Error != "" {
				keepServerLogs(cluster)
				failedOn = append(failedOn, cluster)
				break
			}
		}
		if err != nil && len(rs) == 0 {
			return err
		}
		runErr = errors.Join(runErr, err)
		return nil
	}
	var ens *zktest.Cluster // the ensemble, kept for W8 with -ensemble
	if len(rest) > 0 {
		size := mainSize(*ensemble)
		cluster, err := startCluster(size, false)
		if err != nil {
			return err
		}
		err = runOn(cluster, config(describe(size, false), rest), peers, &recs)
		if *ensemble && roll {
			ens = cluster
			defer cluster.Close()
		} else {
			cluster.Close()
		}
		if err != nil {
			return err
		}
	}
	// -tls: the same workloads again on a TLS-only server of the same shape
	// (its own, started once the plaintext one is closed, or beside the
	// ensemble -ensemble keeps for W8), for the Go peers only.
	if *withTLS && len(rest) > 0 && len(goPeers) > 0 && ctx.Err() == nil {
		size := mainSize(*ensemble)
		cluster, err := startCluster(size, true)
		if err != nil {
			return err
		}
		err = runOn(cluster, config(describe(size, true), rest), goPeers, &tlsRecs)
		cluster.Close()
		if err != nil {
			return err
		}
	}
	if roll && ctx.Err() == nil {
		if ens == nil {
			cluster, err := startCluster(3, false)
			if err != nil {
				return err
			}
			defer cluster.Close()
			ens = cluster
		}
		cfg := config(describe(3, false), []string{bench.W8})
		cfg.Repeat, cfg.Warmup = 1, false
		if err := runOn(ens, cfg, peers, &recs); err != nil {
			return err
		}
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
	fmt.Printf("zkbench (%s): ZooKeeper 3.8; %s, %d CPUs\n", mode, runtime.Version(), runtime.NumCPU())
	for _, s := range setups {
		fmt.Printf("  %s\n", s)
	}
	for _, n := range notes {
		fmt.Printf("  %s\n", n)
	}
	if baseline != shepherdPeer {
		fmt.Printf("  ratio column: shepherd is not registered yet, so it is raw / peer (the floor's median over the peer's)\n")
	}
	bench.WriteTable(os.Stdout, recs, names, baseline)
	if len(tlsRecs) > 0 {
		var goNames []string
		tlsBaseline := floorPeer
		for _, p := range goPeers {
			goNames = append(goNames, p.Name())
			if p.Name() == shepherdPeer {
				tlsBaseline = shepherdPeer
			}
		}
		fmt.Printf("\nover TLS (%s): the Go peers only; Curator and Kazoo are not run over TLS\n"+
			"(their TLS setup, a JVM keystore and truststore, a Python ssl context, is not wired into their drivers)\n",
			tlsRecs[0].Label)
		bench.WriteTable(os.Stdout, tlsRecs, goNames, tlsBaseline)
		fmt.Printf("\nTLS next to plaintext (medians; same run, same machine):\n")
		bench.WriteComparison(os.Stdout, recs, tlsRecs, goNames, "plaintext", "TLS")
	}
	fmt.Printf("\ntotal %v", time.Since(t0).Round(100*time.Millisecond))
	if jsonFile != nil {
		fmt.Printf("; raw results: %s", *jsonOut)
	}
	fmt.Println()
	if runErr != nil {
		return runErr
	}
	if len(failedOn) > 0 {
		return errors.New("some runs failed (see the table)")
	}
	return nil
}

// mainSize is the size of the cluster every workload but W8 runs on.
func mainSize(ensemble bool) int {
	if ensemble {
		return 3
	}
	return 1
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
