package zktest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a throw-away certificate authority for tests: an ECDSA P-256 key and
// a self-signed certificate, valid for a day. It issues short-lived server
// and client certificates. It is safe for concurrent use.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

// NewCA makes a CA named cn. Two CAs never trust each other's certificates:
// a second CA is how a test makes a "wrong CA".
func NewCA(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("zktest: CA key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"zktest"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("zktest: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("zktest: CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, fmt.Errorf("zktest: serial number: %w", err)
	}
	return n, nil
}

// Pool returns a pool holding the CA's certificate, for tls.Config's
// RootCAs (to verify servers) or ClientCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// CertPEM returns the CA's certificate, PEM-encoded.
func (ca *CA) CertPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// ClientCert issues a client certificate for the principal cn, valid from an
// hour ago for an hour. ZooKeeper's x509 authentication provider names the
// client "CN=<cn>" (its subject).
func (ca *CA) ClientCert(cn string) (tls.Certificate, error) {
	now := time.Now()
	return ca.Issue(cn, now.Add(-time.Hour), now.Add(time.Hour))
}

// ExpiredClientCert issues a client certificate for cn that expired a minute
// ago.
func (ca *CA) ExpiredClientCert(cn string) (tls.Certificate, error) {
	now := time.Now()
	return ca.Issue(cn, now.Add(-2*time.Hour), now.Add(-time.Minute))
}

// Issue issues a certificate for cn, valid from notBefore to notAfter, usable
// by a server and by a client, for the names 127.0.0.1 and localhost.
func (ca *CA) Issue(cn string, notBefore, notAfter time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("zktest: key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("zktest: certificate for %q: %w", cn, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("zktest: certificate for %q: %w", cn, err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

// TLSConfig configures the servers' TLS (see WithTLS). The zero value asks for
// mutual TLS with a fresh CA.
type TLSConfig struct {
	// CA issues the servers' certificates and is the CA the servers trust
	// for client certificates. Nil: a fresh CA (see Cluster.CA).
	CA *CA
	// NoClientAuth lets clients connect without a certificate
	// (ssl.clientAuth=none). By default the servers require one
	// (ssl.clientAuth=need) and authenticate its subject with ZooKeeper's
	// x509 provider (the principal "CN=<name>").
	NoClientAuth bool
	// ExpiredServerCert makes the servers present a certificate that has
	// expired, to test what a client does with one.
	ExpiredServerCert bool
	// TLS13 makes the servers speak TLS 1.3 only (ZooKeeper 3.8 speaks
	// TLS 1.2 by default). Under TLS 1.3 a server checks the client's
	// certificate after the client has completed its handshake.
	TLS13 bool
}

// WithTLS serves clients over TLS only: each server's client port is a
// secureClientPort (ZooKeeper's Netty connection factory; quorum traffic stays
// plaintext) with a certificate for 127.0.0.1 and localhost issued by the
// cluster's CA. Addr, Servers and the four-letter words use the TLS port, the
// words over TLS. Cluster.ClientTLS gives a client configuration that works.
// ExpireSession and DisconnectSession, which speak plaintext, do not work on
// such a cluster, and a Tap or a Proxy forwards TLS but records no
// Credentials (it sees ciphertext).
func WithTLS(tc TLSConfig) Option {
	return func(c *config) { c.tls = &tc }
}

// tlsState is a cluster's TLS material.
type tlsState struct {
	ca        *CA
	client    *tls.Config // the cluster's own client (four-letter words) and ClientTLS
	keyStore  string      // server key and certificate chain, PEM
	trustPath string      // CA certificate, PEM
	clientCN  string
	noAuth    bool
	tls13     bool
}

// ClientCN is the principal of the client certificate in Cluster.ClientTLS.
const ClientCN = "zktest-client"

// setupTLS makes the CA (if none was given) and the server certificate, and
// writes them as PEM under dir.
func setupTLS(tc *TLSConfig, dir string) (*tlsState, error) {
	ca := tc.CA
	if ca == nil {
		var err error
		if ca, err = NewCA("zktest CA"); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	notBefore, notAfter := now.Add(-time.Hour), now.Add(23*time.Hour)
	if tc.ExpiredServerCert {
		notBefore, notAfter = now.Add(-2*time.Hour), now.Add(-time.Minute)
	}
	srv, err := ca.Issue("zktest server", notBefore, notAfter)
	if err != nil {
		return nil, err
	}
	cli, err := ca.ClientCert(ClientCN)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(srv.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("zktest: server key: %w", err)
	}
	var ks []byte
	ks = append(ks, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})...)
	for _, der := range srv.Certificate {
		ks = append(ks, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	tdir := filepath.Join(dir, "tls")
	if err := os.MkdirAll(tdir, 0o700); err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	st := &tlsState{
		ca:        ca,
		keyStore:  filepath.Join(tdir, "server.pem"),
		trustPath: filepath.Join(tdir, "ca.pem"),
		clientCN:  ClientCN,
		noAuth:    tc.NoClientAuth,
		tls13:     tc.TLS13,
	}
	if err := os.WriteFile(st.keyStore, ks, 0o600); err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	if err := os.WriteFile(st.trustPath, ca.CertPEM(), 0o644); err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	st.client = &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cli}, MinVersion: tls.VersionTLS12}
	if tc.ExpiredServerCert {
		// The cluster's own probes must still reach the servers.
		st.client.InsecureSkipVerify = true
	}
	return st, nil
}

// CA is the CA of a TLS cluster (WithTLS), nil otherwise.
func (c *Cluster) CA() *CA {
	if c.tls == nil {
		return nil
	}
	return c.tls.ca
}

// ClientTLS returns a new client configuration for a TLS cluster (WithTLS):
// the CA as RootCAs and a client certificate for the principal ClientCN. It
// returns nil for a plaintext cluster.
func (c *Cluster) ClientTLS() *tls.Config {
	if c.tls == nil {
		return nil
	}
	cfg := c.tls.client.Clone()
	cfg.InsecureSkipVerify = false
	return cfg
}
