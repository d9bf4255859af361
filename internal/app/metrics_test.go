package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// writeServingCert writes a CA and a serving certificate it signs for dns
// into dir as cert-manager and OpenShift's service CA write them (tls.crt,
// tls.key; ca.crt from cert-manager), and returns the CA pool.
func writeServingCert(t *testing.T, dir string, dns ...string) *x509.CertPool {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vmobs-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dns[0]}, DNSNames: dns,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]*pem.Block{
		"tls.crt": {Type: "CERTIFICATE", Bytes: der},
		"tls.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
		"ca.crt":  {Type: "CERTIFICATE", Bytes: caDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}

func TestMetricsServerOptions(t *testing.T) {
	certs := t.TempDir()
	writeServingCert(t, certs, "vmobs-controller-manager-metrics.vmobs-system.svc")
	tests := map[string]struct {
		opts Options
		// wantALPN is what the server offers after its TLSOpts ran.
		wantALPN           []string
		wantFilter         bool
		wantCert, wantKey  string
		wantErr            bool
		wantCertDirDefault bool
	}{
		"plain HTTP": {opts: Options{MetricsAddr: ":8080"}},
		"HTTPS, self-signed, HTTP/1.1 only": {
			opts: Options{MetricsAddr: ":8443", SecureMetrics: true}, wantALPN: []string{"http/1.1"}, wantFilter: true, wantCertDirDefault: true,
		},
		"HTTPS with HTTP/2 asked for": {
			opts: Options{MetricsAddr: ":8443", SecureMetrics: true, EnableHTTP2: true}, wantALPN: []string{"h2"}, wantFilter: true, wantCertDirDefault: true,
		},
		"a mounted certificate": {
			opts:     Options{MetricsAddr: ":8443", SecureMetrics: true, MetricsCertDir: certs},
			wantALPN: []string{"http/1.1"}, wantFilter: true, wantCert: "tls.crt", wantKey: "tls.key",
		},
		"a mounted certificate under other names": {
			opts:     Options{MetricsAddr: ":8443", SecureMetrics: true, MetricsCertDir: certs, MetricsCertName: "ca.crt", MetricsKeyName: "tls.key"},
			wantALPN: []string{"http/1.1"}, wantFilter: true, wantCert: "ca.crt", wantKey: "tls.key",
		},
		"a directory without the certificate": {
			opts:    Options{MetricsAddr: ":8443", SecureMetrics: true, MetricsCertDir: t.TempDir()},
			wantErr: true,
		},
		"a certificate without HTTPS": {
			opts:    Options{MetricsAddr: ":8080", MetricsCertDir: certs},
			wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := metricsServerOptions(tc.opts)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got.BindAddress != tc.opts.MetricsAddr || got.SecureServing != tc.opts.SecureMetrics {
				t.Errorf("bind %q secure %v", got.BindAddress, got.SecureServing)
			}
			if (got.FilterProvider != nil) != tc.wantFilter {
				t.Errorf("authentication and authorization filter: %v, want %v", got.FilterProvider != nil, tc.wantFilter)
			}
			c := &tls.Config{NextProtos: []string{"h2"}} // controller-runtime's start
			for _, o := range got.TLSOpts {
				o(c)
			}
			if tc.opts.SecureMetrics && !slices.Equal(c.NextProtos, tc.wantALPN) {
				t.Errorf("ALPN %v, want %v", c.NextProtos, tc.wantALPN)
			}
			if tc.wantCertDirDefault && got.CertDir != "" {
				t.Errorf("cert dir %q: controller-runtime's default makes it self-signed", got.CertDir)
			}
			if tc.wantCert != "" && (got.CertDir != certs || got.CertName != tc.wantCert || got.KeyName != tc.wantKey) {
				t.Errorf("certificate %s/%s, key %s", got.CertDir, got.CertName, got.KeyName)
			}
		})
	}
}

// The metrics server serves the mounted certificate, which a client
// trusting its CA verifies for the Service's name, and speaks HTTP/1.1 to
// a client that offers HTTP/2 first.
func TestMetricsServerServesTheMountedCertificate(t *testing.T) {
	const dns = "vmobs-controller-manager-metrics.vmobs-system.svc"
	certs := t.TempDir()
	pool := writeServingCert(t, certs, dns)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	opts, err := metricsServerOptions(Options{MetricsAddr: addr, SecureMetrics: true, MetricsCertDir: certs})
	if err != nil {
		t.Fatal(err)
	}
	// The authentication filter needs an API server; what is checked here
	// is the TLS underneath it.
	opts.FilterProvider = nil
	srv, err := metricsserver.NewServer(opts, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("metrics server: %v", err)
		}
	})

	var conn *tls.Conn
	// Polls until the server listens; the minute only catches a hang.
	deadline := time.Now().Add(time.Minute)
	for {
		conn, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: dns, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("TLS handshake with the metrics server, trusting the test CA: %v", err)
	}
	defer conn.Close()
	st := conn.ConnectionState()
	if st.NegotiatedProtocol != "http/1.1" {
		t.Errorf("negotiated %q, want http/1.1", st.NegotiatedProtocol)
	}
	if len(st.PeerCertificates) == 0 || !slices.Contains(st.PeerCertificates[0].DNSNames, dns) {
		t.Errorf("served certificate %v, want the mounted one for %s", st.PeerCertificates, dns)
	}
}
