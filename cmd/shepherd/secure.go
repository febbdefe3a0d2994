package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/shepherdzk/shepherd/session"
)

// Environment variables of the secured connection, read as the flags'
// defaults (as SHEPHERD_ZK is -zk's); SHEPHERD_AUTH holds the credentials
// themselves.
const (
	envTLSCA   = "SHEPHERD_TLS_CA"
	envTLSCert = "SHEPHERD_TLS_CERT"
	envTLSKey  = "SHEPHERD_TLS_KEY"
	envAuth    = "SHEPHERD_AUTH"
)

// credentialFlags are flags that would put credentials on the command line,
// where every user of the machine sees them (ps, /proc/PID/cmdline):
// refused, with where to put them instead. Their values are never echoed.
var credentialFlags = map[string]bool{"auth": true, "password": true, "digest": true}

func credentialFlagError(name string) error {
	return fmt.Errorf("-%s: shepherd takes no credentials on the command line (every user of the machine "+
		"sees them in ps): put the line scheme:credentials in a file only you can read (chmod 600) "+
		"and give -auth-file FILE, or set %s=scheme:credentials", name, envAuth)
}

// aclPreset is -acl: the ACL of the nodes shepherd creates.
type aclPreset string

const (
	aclOpen        aclPreset = "open"
	aclCreator     aclPreset = "creator"
	aclCreatorOnly aclPreset = "creator-only"
)

func (a *aclPreset) String() string {
	if a == nil || *a == "" {
		return ""
	}
	return string(*a)
}

func (a *aclPreset) Set(s string) error {
	switch p := aclPreset(s); p {
	case aclOpen, aclCreator, aclCreatorOnly:
		*a = p
		return nil
	}
	return errors.New("want open, creator or creator-only")
}

func (a *aclPreset) help() string {
	return "ACL of the nodes shepherd creates (`open|creator|creator-only`): open:\n" +
		"open to all; creator: only the creator's principal may change or delete\n" +
		"them or join PATH, anyone may read them (status works for all);\n" +
		"creator-only: nobody else may even read them. Both need -auth-file,\n" +
		envAuth + " or a client certificate. Default: creator with credentials or a\n" +
		"client certificate, open without. Whoever may hold PATH may still delete\n" +
		"the other holders' nodes: ZooKeeper's ACLs cannot tell them apart\n" +
		"('shepherd help')"
}

// acl is the preset's ACL, and whether it needs an authenticated creator.
func (a aclPreset) acl() (acl []zk.ACL, needsAuth bool) {
	switch a {
	case aclCreator:
		// The "auth" scheme stands for every principal the creating session
		// authenticated as (its digest user, its certificate's subject).
		return session.CreatorACL(), true
	case aclCreatorOnly:
		return zk.AuthACL(zk.PermAll), true
	}
	return zk.WorldACL(zk.PermAll), false
}

// security turns the TLS, auth and ACL flags into session options. Every
// error is a usage error naming the flag (or variable) and the file; none
// shows a credential.
func (o *options) security(stderr io.Writer) ([]session.Option, error) {
	var opts []session.Option
	cfg, err := o.tlsConfig(stderr)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		opts = append(opts, session.WithTLS(cfg))
	}
	auth, err := o.credentials()
	if err != nil {
		return nil, err
	}
	for _, a := range auth {
		opts = append(opts, session.WithAuth(a.scheme, a.cred))
	}
	acl, needsAuth := o.acl.acl()
	if needsAuth && len(auth) == 0 && o.tlsCert == "" {
		return nil, usagef("-acl %s needs credentials: the nodes' ACL names the principal that creates them; "+
			"give -auth-file FILE (or %s=scheme:credentials), or a client certificate (-tls-cert and -tls-key, "+
			"on a ZooKeeper with the x509 auth provider)", o.acl, envAuth)
	}
	if o.acl != "" {
		// No -acl: the session's default (creator when authenticated).
		opts = append(opts, session.WithACL(acl))
	}
	return opts, nil
}

// tlsOn reports whether a TLS flag (or its variable) asks for TLS.
func (o *options) tlsOn() bool {
	return o.tls || o.tlsCA != "" || o.tlsCert != "" || o.tlsKey != ""
}

// tlsConfig is the client's TLS configuration, nil without TLS. The CA
// bundle is read once; the client certificate and key are read now (to
// report a bad file as bad usage) and again at each handshake, so that a
// reconnect presents a rotated certificate.
func (o *options) tlsConfig(stderr io.Writer) (*tls.Config, error) {
	if !o.tlsOn() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.tlsCA != "" {
		b, err := readFlagFile("tls-ca", o.tlsCA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, usagef("-tls-ca %s: no PEM certificate (-----BEGIN CERTIFICATE-----) in the file", o.tlsCA)
		}
		cfg.RootCAs = pool
	}
	switch {
	case o.tlsCert != "" && o.tlsKey == "":
		return nil, usagef("-tls-cert %s needs -tls-key FILE (or %s): the certificate's private key", o.tlsCert, envTLSKey)
	case o.tlsKey != "" && o.tlsCert == "":
		return nil, usagef("-tls-key %s needs -tls-cert FILE (or %s): the client certificate", o.tlsKey, envTLSCert)
	case o.tlsCert != "":
		kf := &keyPairFiles{cert: o.tlsCert, key: o.tlsKey, stderr: stderr}
		if _, err := kf.load(); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = kf.get
	}
	return cfg, nil
}

// keyPairFiles re-reads a client certificate and its key at each
// handshake. A file that cannot be read then (mid-rotation, say) leaves the
// last good pair in use, with a warning.
type keyPairFiles struct {
	cert, key string
	stderr    io.Writer

	mu   sync.Mutex
	last *tls.Certificate
	warn string // the last warning, not repeated
}

func (k *keyPairFiles) load() (*tls.Certificate, error) {
	cb, err := readFlagFile("tls-cert", k.cert)
	if err != nil {
		return nil, err
	}
	kb, err := readFlagFile("tls-key", k.key)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(cb, kb)
	if err != nil {
		return nil, usagef("-tls-cert %s, -tls-key %s: %v", k.cert, k.key, err)
	}
	k.mu.Lock()
	k.last, k.warn = &pair, ""
	k.mu.Unlock()
	return &pair, nil
}

func (k *keyPairFiles) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	pair, err := k.load()
	if err == nil {
		return pair, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if w := err.Error(); w != k.warn {
		k.warn = w
		fmt.Fprintf(k.stderr, "shepherd: warning: re-reading the client certificate: %s; presenting the one read before\n", w)
	}
	return k.last, nil
}

// readFlagFile reads the file a flag names; the error, a usage error, names
// the flag and the file.
func readFlagFile(flag, name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, usagef("-%s %s: cannot read the file: %v", flag, name, pathErr(err))
	}
	return b, nil
}

// pathErr is err without the path a *fs.PathError repeats.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

type credential struct {
	scheme string
	cred   []byte
}

// looksLikeCredentials: a value given for a file name that is no file but
// reads as scheme:credentials is not echoed.
var looksLikeCredentials = regexp.MustCompile(`^[A-Za-z0-9_-]+:`)

// credentials are -auth-file's, else SHEPHERD_AUTH's.
func (o *options) credentials() ([]credential, error) {
	if o.authFile != "" {
		return readAuthFile(o.authFile)
	}
	v := os.Getenv(envAuth)
	if v == "" {
		return nil, nil
	}
	c, ok := parseCredential(v)
	if !ok {
		return nil, usagef("%s: want scheme:credentials, e.g. digest:alice:secret (the value is not shown)", envAuth)
	}
	return []credential{c}, nil
}

// readAuthFile reads -auth-file: one scheme:credentials per line (blank
// lines and # comments skipped). A file group or others can read is
// refused, as ssh refuses such a key.
func readAuthFile(name string) ([]credential, error) {
	fi, err := os.Stat(name)
	if err != nil {
		if looksLikeCredentials.MatchString(name) && !strings.HasPrefix(name, "/") {
			return nil, usagef("-auth-file: no such file (its value is not shown: it reads like scheme:credentials); " +
				"credentials go in a file only you can read, or in " + envAuth + ", never on the command line")
		}
		return nil, usagef("-auth-file %s: cannot read the file: %v", name, pathErr(err))
	}
	if fi.IsDir() {
		return nil, usagef("-auth-file %s: a directory, not a file", name)
	}
	if perm := fi.Mode().Perm(); perm&0o044 != 0 {
		return nil, usagef("-auth-file %s: mode %04o lets other users read the credentials: chmod 600 %s", name, perm, name)
	}
	b, err := readFlagFile("auth-file", name)
	if err != nil {
		return nil, err
	}
	var out []credential
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c, ok := parseCredential(line)
		if !ok {
			return nil, usagef("-auth-file %s: line %d: want scheme:credentials, e.g. digest:alice:secret (the line is not shown)", name, n)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, usagef("-auth-file %s: no scheme:credentials line in the file", name)
	}
	return out, nil
}

func parseCredential(s string) (credential, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || scheme == "" || cred == "" || strings.ContainsAny(scheme, " \t") {
		return credential{}, false
	}
	return credential{scheme, []byte(cred)}, true
}
