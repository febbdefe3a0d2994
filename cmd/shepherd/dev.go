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
	s := newSub("dev", "shepherd dev [-port 2181] [-data DIR] [-tls]", `
Start a standalone ZooKeeper on 127.0.0.1 to try shepherd on, print the
export SHEPHERD_ZK=... line for the other commands, and run until Ctrl-C
(SIGINT) or SIGTERM, then stop the server and remove what it made.

For trying things out only, never for production: one server (no
replication), no fsync, data in a temporary directory unless -data. It needs
Java and ZooKeeper's jars: Debian's zookeeper package, or
ZOOKEEPER_CLASSPATH.

With -tls the port speaks TLS only and wants a client certificate (mutual
TLS): a throw-away CA issues the server's certificate and a client's, which
is written with its key and the CA's certificate under the data directory
(client-tls/), and the export line sets SHEPHERD_TLS_CA, SHEPHERD_TLS_CERT
and SHEPHERD_TLS_KEY to them.`,
		"shepherd dev",
		"shepherd dev -port 2182 -data ~/.shepherd-dev",
		"shepherd dev -tls -port 2281")
	port := s.fs.Int("port", 2181, "client `PORT` on 127.0.0.1 (0: any free port)")
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
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("dev: Java not found (%v): %s", err, installHint)
	}
	cp, err := zktest.Classpath()
	if errors.Is(err, zktest.ErrNotInstalled) {
		return fmt.Errorf("dev: ZooKeeper's jars not found: %s", installHint)
	} else if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	opts := []zktest.Option{zktest.WithClasspath(cp), zktest.WithStartTimeout(90 * time.Second)}
	if *port != 0 {
		// Another server on the port would answer zktest's readiness probe
		// for ours: check it is free first.
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
		if err != nil {
			return fmt.Errorf("dev: port %d is taken (another ZooKeeper?): choose another with -port: %w", *port, err)
		}
		l.Close()
		opts = append(opts, zktest.WithClientPort(*port))
	}
	if *data != "" {
		dir, err := filepath.Abs(*data)
		if err != nil {
			return usagef("dev: -data: %v", err)
		}
		opts = append(opts, zktest.WithDataDir(dir))
	}
	if *useTLS {
		opts = append(opts, zktest.WithTLS(zktest.TLSConfig{}))
	}
	fmt.Fprintln(c.stderr, "shepherd dev: starting a standalone ZooKeeper (for trying things out, never for production)...")
	zk, err := zktest.StartCluster(ctx, 1, opts...)
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
	export := "export SHEPHERD_ZK=" + zk.Addr(0)
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
	fmt.Fprintf(c.stderr, `shepherd dev: ZooKeeper %s on %s (data %s).
It is for trying things out, never for production: one server, no fsync.
In another shell:
  %s
  shepherd lock /demo/lock -- sh -c 'echo "token $SHEPHERD_TOKEN"; sleep 5'
  shepherd status /demo/lock
Ctrl-C stops it.
`, serves, zk.Addr(0), where, export)
	// Report a server that dies under us; the check is cheap and rare.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(c.stderr, "shepherd dev: stopping ZooKeeper")
			if err := zk.Close(); err != nil {
				return fmt.Errorf("dev: %w", err)
			}
			return nil
		case <-tick.C:
			if !zk.Running(0) {
				return fmt.Errorf("dev: ZooKeeper exited; its log:\n%s", zk.LogTail(0, 20))
			}
		}
	}
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
