package lab

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
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// TLSFiles are the PEM files of a lab's throwaway certificate authority and
// of the one certificate every server (and the lab's own clients) present.
// The certificate is valid for 127.0.0.1, ::1 and localhost (and, in a lab
// with Config.Partitions, for every server's own address), for server and
// client authentication, for one day.
type TLSFiles struct {
	CAFile   string // the CA certificate clients must trust
	CertFile string // certificate for servers and clients
	KeyFile  string // its private key
}

// ClientConfig is a TLS configuration that trusts the lab's CA and presents
// the lab's certificate (useful when a node requires client certificates).
func (f TLSFiles) ClientConfig() (*tls.Config, error) {
	caPEM, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, fmt.Errorf("lab: read CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("lab: %s holds no PEM certificate", f.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("lab: load key pair: %w", err)
	}
	return &tls.Config{
		RootCAs:      pool,
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// GenerateTLS writes a fresh CA and a certificate signed by it into dir.
func GenerateTLS(dir string) (TLSFiles, error) { return generateTLS(dir, nil) }

// generateTLS is GenerateTLS with a certificate also valid for hosts.
func generateTLS(dir string, hosts []netip.Addr) (TLSFiles, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TLSFiles{}, err
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "rediskit lab CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return TLSFiles{}, fmt.Errorf("lab: create CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return TLSFiles{}, err
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TLSFiles{}, err
	}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	for _, h := range hosts {
		if h != netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
			ips = append(ips, h.AsSlice())
		}
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  ips,
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, caCert, &key.PublicKey, caKey)
	if err != nil {
		return TLSFiles{}, fmt.Errorf("lab: create certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return TLSFiles{}, err
	}

	files := TLSFiles{
		CAFile:   filepath.Join(dir, "ca.crt"),
		CertFile: filepath.Join(dir, "redis.crt"),
		KeyFile:  filepath.Join(dir, "redis.key"),
	}
	writes := []struct {
		path, kind string
		der        []byte
		mode       os.FileMode
	}{
		{files.CAFile, "CERTIFICATE", caDER, 0o644},
		{files.CertFile, "CERTIFICATE", der, 0o644},
		{files.KeyFile, "EC PRIVATE KEY", keyDER, 0o600},
	}
	for _, w := range writes {
		data := pem.EncodeToMemory(&pem.Block{Type: w.kind, Bytes: w.der})
		if err := os.WriteFile(w.path, data, w.mode); err != nil {
			return TLSFiles{}, fmt.Errorf("lab: write %s: %w", w.path, err)
		}
	}
	return files, nil
}
