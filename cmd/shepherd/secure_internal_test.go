package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shepherdzk/shepherd/zktest"
)

// TestTLSKeyPairReread: each handshake reads the certificate and key
// again; while they cannot be read (mid-rotation) the last good pair is
// presented, with one warning.
func TestTLSKeyPairReread(t *testing.T) {
	t.Parallel()
	ca, err := zktest.NewCA("reread CA")
	require.NoError(t, err)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	write := func(cn string) {
		c, err := ca.ClientCert(cn)
		require.NoError(t, err)
		var chain []byte
		for _, der := range c.Certificate {
			chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
		}
		k, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cert, chain, 0o644))
		require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}), 0o600))
	}
	write("first")
	var warn bytes.Buffer
	o := options{tlsCert: cert, tlsKey: key}
	cfg, err := o.tlsConfig(&warn)
	require.NoError(t, err)
	got, err := cfg.GetClientCertificate(nil)
	require.NoError(t, err)
	require.Equal(t, "first", got.Leaf.Subject.CommonName)

	write("second")
	got, err = cfg.GetClientCertificate(nil)
	require.NoError(t, err)
	require.Equal(t, "second", got.Leaf.Subject.CommonName, "re-read")

	require.NoError(t, os.Remove(key))
	for range 2 {
		got, err = cfg.GetClientCertificate(nil)
		require.NoError(t, err)
		require.Equal(t, "second", got.Leaf.Subject.CommonName, "the last good pair")
	}
	require.Equal(t, 1, bytes.Count(warn.Bytes(), []byte("warning")), warn.String())
	require.Contains(t, warn.String(), "-tls-key "+key+": cannot read the file")
}
