package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/shepherdzk/shepherd/zktest"
)

// installHint says what to install when Java or ZooKeeper is missing.
const installHint = "install them with `apt-get install zookeeper default-jre-headless` (Debian, Ubuntu), " +
	"or install Java and set ZOOKEEPER_CLASSPATH to a classpath holding ZooKeeper's jars and their dependencies"

func (c *cli) cmdDev(ctx context.Context, args []string) error {
	s := newSub("dev", "shepherd dev [-servers 1|3|5] [-port 2181] [-data DIR] [-tls]", `
Start a standalone ZooKeeper on 127.0.0.1 to try shepherd on, print the
export SHEPHERD_ZK=... line for the other commands, and run until Ctrl-C
(SIGINT) or SIGTERM, then stop the server and remove what it made.

With -servers 3 (or 5) it starts an ensemble on loopback instead, on free
ports (the export line lists them), to rehearse what a rolling restart does
to holders: SIGHUP restarts its servers one after the other, each serving
again before the next, as an operator's rolling restart does. Its servers
grant sessions from 1s to 60s (tickTime 500ms): the CLI's default 10s is
granted as asked.

For trying things out only, never for production: no fsync, data in a
temporary directory unless -data. It needs Java and ZooKeeper's jars:
Debian's zookeeper package, or ZOOKEEPER_CLASSPATH.

With -tls the port speaks TLS only and wants a client certificate (mutual
TLS): a throw-away CA issues the server's certificate and a client's, which
is written with its key and the CA's certificate under the data directory
(client-tls/), and the export line sets SHEPHERD_TLS_CA, SHEPHERD_TLS_CERT
and SHEPHERD_TLS_KEY to them.`,
		"shepherd dev",
		"shepherd dev -port 2182 -data ~/.shepherd-dev",
		"shepherd dev -servers 3 > dev.env",
		"shepherd dev -tls -port 2281")
	port := s.fs.Int("port", 2181, "client `PORT` on 127.0.0.1 (0: any free port; one server only)")
	servers := s.fs.Int("servers", 1, "how many servers: 1 (standalone) or an ensemble of `N` = 3 or 5 on free ports")
	data := s.fs.String("data", "", "keep the server's data in `DIR` (kept on exit; default: a temporary directory, removed)")
	useTLS := s.fs.Bool("tls", false, "serve TLS only (mutual TLS), with a throw-away CA and a client certificate\n"+
		"written under the data directory; print the SHEPHERD_TLS_* exports too")
	pos, argv, err := s.parse(args, c.stdout)
	if err != nil {
		return err
	}
	if len(pos)+len(argv) > 0 {
		return usagef("dev: unexpected arguments %q", strings.Join(append(pos, argv...), " "))
	}
	if *port < 0 || *port > 65535 {
		return usagef("dev: -port %d: want 0-65535", *port)
	}
	switch {
	case *servers != 1 && *servers != 3 && *servers != 5:
		return usagef("dev: -servers %d: want 1, 3 or 5", *servers)
	case *servers > 1 && flagSet(s.fs, "port"):
		return usagef("dev: -port is for one server: an ensemble's ports are chosen free, and printed")
	case *servers > 1:
		*port = 0
	}
	opts, err := devOptions(*port, *data, *useTLS)
	if err != nil {
		return err
	}
	what := "a standalone ZooKeeper"
	if *servers > 1 {
		what = fmt.Sprintf("an ensemble of %d ZooKeeper servers", *servers)
	}
	fmt.Fprintf(c.stderr, "shepherd dev: starting %s (for trying things out, never for production)...\n", what)
	zk, err := zktest.StartCluster(ctx, *servers, opts...)
	if err != nil {
		if ctx.Err() != nil {
			return interruptedWaiting(ctx, "starting ZooKeeper")
		}
		return fmt.Errorf("dev: %w", err)
	}
	defer zk.Close()
	where := "in " + zk.Dir() + ", removed on exit"
	if *data != "" {
		where = "in " + zk.Dir() + ", kept"
	}
	export := "export SHEPHERD_ZK=" + zk.ConnectString()
	serves := "serves"
	if *useTLS {
		files, err := writeDevTLS(zk)
		if err != nil {
			return fmt.Errorf("dev: %w", err)
		}
		export += " " + files
		serves = "serves TLS only (mutual TLS, certificates valid for a day)"
	}
	fmt.Fprintln(c.stdout, export)
	kind := "one server, no fsync"
	if *servers > 1 {
		kind = fmt.Sprintf("%d servers on loopback, no fsync; SIGHUP restarts them one by one", *servers)
	}
	fmt.Fprintf(c.stderr, `shepherd dev: ZooKeeper %s on %s (data %s).
It is for trying things out, never for production: %s.
In another shell:
  %s
  shepherd lock /demo/lock -- sh -c 'echo "token $SHEPHERD_TOKEN"; sleep 5'
  shepherd status /demo/lock
Ctrl-C stops it.
`, serves, zk.ConnectString(), where, kind, export)
	return c.devServe(ctx, zk)
}

// devOptions are zktest's options for dev's servers.
func devOptions(port int, data string, useTLS bool) ([]zktest.Option, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("dev: Java not found (%v): %s", err, installHint)
	}
	cp, err := zktest.Classpath()
	if errors.Is(err, zktest.ErrNotInstalled) {
		return nil, fmt.Errorf("dev: ZooKeeper's jars not found: %s", installHint)
	} else if err != nil {
		return nil, fmt.Errorf("dev: %w", err)
	}
	// Sessions from 2 ticks (1s) to 60s: the CLI's default 10s as asked.
	opts := []zktest.Option{zktest.WithClasspath(cp), zktest.WithStartTimeout(90 * time.Second),
		zktest.WithTickTime(devTick), zktest.WithMaxSessionTimeout(time.Minute)}
	if port != 0 {
		// Another server on the port would answer zktest's readiness probe
		// for ours: check it is free first.
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return nil, fmt.Errorf("dev: port %d is taken (another ZooKeeper?): choose another with -port: %w", port, err)
		}
		l.Close()
		opts = append(opts, zktest.WithClientPort(port))
	}
	if data != "" {
		dir, err := filepath.Abs(data)
		if err != nil {
			return nil, usagef("dev: -data: %v", err)
		}
		opts = append(opts, zktest.WithDataDir(dir))
	}
	if useTLS {
		opts = append(opts, zktest.WithTLS(zktest.TLSConfig{}))
	}
	return opts, nil
}

// writeDevTLS writes the CA certificate and a client certificate with its
// key for a TLS dev server under its directory, and returns the
// SHEPHERD_TLS_* assignments naming them.
func writeDevTLS(zk *zktest.Cluster) (string, error) {
	dir := filepath.Join(zk.Dir(), "client-tls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	now := time.Now()
	// As long as the server's certificate (zktest's: a day).
	cert, err := zk.CA().Issue("shepherd-dev", now.Add(-time.Hour), now.Add(23*time.Hour))
	if err != nil {
		return "", err
	}
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return "", err
	}
	var chain []byte
	for _, der := range cert.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	files := []struct {
		env, name string
		data      []byte
	}{
		{envTLSCA, "ca.pem", zk.CA().CertPEM()},
		{envTLSCert, "client.pem", chain},
		{envTLSKey, "client-key.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})},
	}
	var out []string
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			return "", err
		}
		out = append(out, f.env+"="+shellQuote(p))
	}
	return strings.Join(out, " "), nil
}

// shellQuote quotes s for a POSIX shell, if it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=+,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
